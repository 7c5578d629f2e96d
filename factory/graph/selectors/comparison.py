"""Gather candidates, then compare them on a found property.

A group entity (not a hub) defines the set; candidates are entities of the answer's
type that share a chunk with it; each candidate gets a chunk, from a document of its
own, that holds a value of one kind (a date or a number) to compare. Where the chunk
that ties a candidate to the group holds no value, a second chunk supplies it.
"""

from __future__ import annotations

import random

from factory.graph.selectors.base import (
    Failures,
    NoSubgraph,
    SelectionIndex,
    SelectorParams,
    best_of,
    chunks_in_new_docs,
    make_subgraph,
)
from factory.graph.selectors.chain import VALUE_KINDS, _prefer_articles, answer_pool, has_value
from factory.records import Cell, Subgraph


def _members(ix: SelectionIndex, group: int, labels: frozenset[str], max_df: int) -> dict[int, list[int]]:
    """Entities of the answer's type sharing a chunk with the group -> those chunks (memoised)."""
    memo = ix.memo.setdefault(("members", labels, max_df), {})
    found = memo.get(group)
    if found is None:
        found = {}
        for c in ix.ent_chunks[group]:
            for e in ix.chunk_ents[c]:
                if e != group and ix.ent_label[e] in labels and ix.ent_df[e] <= max_df:
                    found.setdefault(e, []).append(c)
        memo[group] = found
    return found


def select_comparison(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                      rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    n = params.candidates
    groups = ix.bridge_pool(params)
    if not groups:
        raise NoSubgraph(f"{cell.key}: no group entity occurs in 2..{params.bridge_max_df} documents", structural=True)
    if len(answer_pool(ix, labels, params)) < n:
        raise NoSubgraph(f"{cell.key}: fewer than {n} {cell.answer_type} entities in this corpus", structural=True)
    # where documents are articles about one entity (an encyclopedia), each candidate's value
    # must come from its own article, so the value describes the candidate
    own_article = ix.about_coverage() >= 0.2
    fail = Failures()

    def attempt(_: int):
        group = rng.choice(groups)
        kind = rng.choice(VALUE_KINDS)
        need = has_value(ix, kind)
        members = {e: cs for e, cs in _members(ix, group, labels, params.answer_max_df).items()
                   if not ix.related(e, group)}
        if len(members) < n:
            fail.add(f"group has fewer than {n} {cell.answer_type} members")
            return None
        order = list(members)
        rng.shuffle(order)
        chosen: list[int] = []
        chunks: list[int] = []
        roles: list[str] = []
        used: set[int] = set()
        for e in order:
            if any(ix.related(e, other) for other in chosen):
                continue
            room = params.max_chunks - len(chunks) - (n - len(chosen) - 1)  # keep one chunk per later candidate
            direct = _prefer_articles(ix, [c for c in members[e] if need(c) and ix.chunk_doc[c] not in used], e)
            if own_article:
                direct = [c for c in direct if ix.about(c) == e]
            if direct:
                pair = [direct[0]]
            elif room >= 2:
                member = [c for c in members[e] if ix.chunk_doc[c] not in used]
                if not member:
                    continue
                prop = _prefer_articles(ix, chunks_in_new_docs(ix, ix.ent_chunks[e], used | {ix.chunk_doc[member[0]]},
                                                               rng, need), e)
                if own_article:
                    prop = [c for c in prop if ix.about(c) == e]
                if not prop:
                    continue
                pair = [member[0], prop[0]]
            else:
                continue
            for i, c in enumerate(pair):
                chunks.append(c)
                used.add(ix.chunk_doc[c])
                roles.append("member" if len(pair) == 2 and i == 0 else "candidate")
            chosen.append(e)
            if len(chosen) == n:
                break
        if len(chosen) < n:
            fail.add(f"fewer than {n} members with a {kind} in a document of their own")
            return None
        if frozenset(ix.chunk_ids[c] for c in chunks) in avoid:
            fail.add("chunk set already used")
            return None
        own = [c for c, role in zip(chunks, roles) if role == "candidate"]
        score = sum(ix.about(c) == e for c, e in zip(own, chosen))
        return score, (group, kind, chosen, chunks, roles, own)

    found = best_of(attempt, params)
    if found is None:
        raise NoSubgraph(fail.reason(cell, params.max_tries))
    (group, kind, chosen, chunks, roles, own), tries = found
    values = {ix.ent_keys[e]: [ix.ent_name[v] for v in ix.ents_with(c, {kind}) if ix.good_value(v)]
              for e, c in zip(chosen, own)}
    figures = {
        "selector": "comparison",
        "value_kind": kind,
        "group_entity": ix.ent_keys[group],
        "candidates": [ix.ent_keys[e] for e in chosen],
        "values": values,
        "about_links": sum(ix.about(c) == e for c, e in zip(own, chosen)),
        "tries": tries,
    }
    return make_subgraph(ix, cell, chunks, roles, answer=None, bridges=chosen, constraints=[group], figures=figures)
