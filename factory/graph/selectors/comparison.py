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
    chunks_in_new_docs,
    make_subgraph,
)
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
    of_type = ix.pool(("answer", labels, params.answer_max_df),
                      lambda: [e for e, lab in enumerate(ix.ent_label) if lab in labels and ix.ent_df[e] <= params.answer_max_df])
    if len(of_type) < n:
        raise NoSubgraph(f"{cell.key}: fewer than {n} {cell.answer_type} entities in this corpus", structural=True)
    fail = Failures()
    for tries in range(1, params.max_tries + 1):
        group = rng.choice(groups)
        kind = rng.choice(("date", "number"))
        value = frozenset({kind})
        members = _members(ix, group, labels, params.answer_max_df)
        if len(members) < n:
            fail.add(f"group has fewer than {n} {cell.answer_type} members")
            continue
        order = list(members)
        rng.shuffle(order)
        chosen: list[int] = []
        chunks: list[int] = []
        roles: list[str] = []
        values: dict[str, list[str]] = {}
        used: set[int] = set()
        for e in order:
            room = params.max_chunks - len(chunks) - (n - len(chosen) - 1)  # keep one chunk per later candidate
            direct = [c for c in members[e] if ix.has_label(c, value) and ix.chunk_doc[c] not in used]
            if direct:
                pair = [rng.choice(direct)]
            elif room >= 2:
                member = [c for c in members[e] if ix.chunk_doc[c] not in used]
                prop = chunks_in_new_docs(ix, ix.ent_chunks[e], used | {ix.chunk_doc[c] for c in member[:1]}, rng,
                                          lambda c: ix.has_label(c, value))
                if not member or not prop:
                    continue
                pair = [member[0], prop[0]]
            else:
                continue
            for i, c in enumerate(pair):
                chunks.append(c)
                used.add(ix.chunk_doc[c])
                roles.append("member" if len(pair) == 2 and i == 0 else "candidate")
            values[ix.ent_keys[e]] = [ix.ent_name[v] for v in ix.ents_with(pair[-1], value)]
            chosen.append(e)
            if len(chosen) == n:
                break
        if len(chosen) < n:
            fail.add(f"fewer than {n} members with a {kind} in a document of their own")
            continue
        if frozenset(ix.chunk_ids[c] for c in chunks) in avoid:
            fail.add("chunk set already used")
            continue
        figures = {
            "selector": "comparison",
            "value_kind": kind,
            "group_entity": ix.ent_keys[group],
            "candidates": [ix.ent_keys[e] for e in chosen],
            "values": values,
            "tries": tries,
        }
        return make_subgraph(ix, cell, chunks, roles, answer=None, bridges=chosen, constraints=[group],
                             figures=figures)
    raise NoSubgraph(fail.reason(cell, params.max_tries))
