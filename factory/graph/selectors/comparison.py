"""Gather candidates, then compare them on a found property.

A group entity (not a hub) defines the set; candidates are entities of the answer's
type that share a chunk with it; each candidate gets a chunk, from a document of its
own, that holds a value of one kind (a date with a year, or a number) to compare.
That chunk must come from the candidate's own article, so the value describes the
candidate, and the candidates must be of one kind by their articles' first sentences
(three cities, not a state, a capital and a country that NER all calls locations).
Where the chunk that ties a candidate to the group holds no value, a second chunk
supplies it. The selector seeds from a candidate that has a value and picks a group
it belongs to, so it never wanders among groups without such members.

A corpus that is not made of articles (news) has no comparison: the dates and numbers
near a name there are those of events, not properties of the thing, and the candidates
share only a mention of the group. The reference writers found no honest comparison in
16 of 16 such draws, and in the encyclopedia none of 10 before the kind rule and 1 of 8
after it: what is still missing is a closed group (the candidates' shared property is
an open set more often than not).
"""

from __future__ import annotations

import random

from factory.graph.selectors.base import (
    Failures,
    NoSubgraph,
    SelectionIndex,
    SelectorParams,
    best_of,
    make_subgraph,
)
from factory.graph.selectors.chain import VALUE_KINDS, answer_pool, has_value
from factory.records import Cell, Subgraph


def _valued_members(ix: SelectionIndex, group: int, labels: frozenset[str], kind: str,
                    valued: dict[int, list[int]], params: SelectorParams) -> dict[int, list[int]]:
    """Entities of the answer's type sharing a chunk with the group -> those chunks, kept
    when they have a value of ``kind`` and their names do not overlap the group's.

    Memoised per group. Most tries fail on a group with fewer than ``candidates`` such
    members: that is known before the name checks, so those are skipped (and {} stored)."""
    max_df, n = params.answer_max_df, params.candidates
    memo = ix.memo.setdefault(("valued-members", labels, kind, max_df, n), {})
    found = memo.get(group)
    if found is None:
        found = {}
        for c in ix.ent_chunks[group]:
            if not ix.plain(c, group):
                continue  # the group's name means something else here
            for e in ix.chunk_ents[c]:
                if e != group and e in valued:  # seeds are of the answer's type, at most max_df
                    found.setdefault(e, []).append(c)
        if len(found) < n:
            found = {}
        else:
            found = {e: cs for e, cs in found.items() if not ix.related(e, group)}
        memo[group] = found
    return found


def _chunk_groups(ix: SelectionIndex, allowed: frozenset[int], params: SelectorParams) -> list[tuple[int, ...]]:
    """Per chunk, its entities that can be a group (in chunk order), built once: a candidate's
    groups are then read from these short tuples instead of every entity of its chunks."""
    def build() -> list[tuple[int, ...]]:
        empty: tuple[int, ...] = ()
        return [tuple([e for e in ents if e in allowed]) or empty for ents in ix.chunk_ents]

    return _cached(ix, ("comparison-chunk-groups", params.bridge_min_df, params.bridge_max_df), build)


def _seeds(ix: SelectionIndex, labels: frozenset[str], kind: str, params: SelectorParams) -> dict[int, list[int]]:
    """Candidates of the answer's type whose articles say what kind of thing they are ->
    chunks of their own article giving them a usable value of ``kind``."""
    need = has_value(ix, kind)

    def build() -> dict[int, list[int]]:
        typed = set(answer_pool(ix, labels, params, with_articles=True))
        out: dict[int, list[int]] = {}
        for c in range(len(ix.chunk_ids)):
            subject = ix.about(c)
            if subject in typed and ix.category(subject) and need(c):
                out.setdefault(subject, []).append(c)
        return out

    return _cached(ix, ("comparison-seeds", labels, kind, params.answer_max_df), build)


def _values_differ(ix: SelectionIndex, chunks: list[int], kind: str) -> bool:
    """Every candidate's passage holds a value of ``kind`` that the others do not all share."""
    sets = [set(ix.values(c, {kind})) for c in chunks]
    for i, own in enumerate(sets):
        others = [x for j, x in enumerate(sets) if j != i]
        if not own - set.intersection(*others):
            return False
    return True


def _cached(ix: SelectionIndex, key: tuple, build):
    memo = ix.memo.setdefault(key, {})
    if 0 not in memo:
        memo[0] = build()
    return memo[0]


def select_comparison(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                      rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    """Seeded from a candidate: pick one that has a value, a group it shares a chunk with,
    then more members of that group that have values of the same kind."""
    n = params.candidates
    allowed = ix.bridge_set(params)
    if not allowed:
        raise NoSubgraph(f"{cell.key}: no group entity occurs in 2..{ix.bridge_max_df(params)} documents",
                         structural=True)
    # each candidate's value must come from its own article, so that it describes the candidate
    if not ix.of_articles():
        raise NoSubgraph(f"{cell.key}: a comparison needs each candidate's own article (its values describe it, "
                         "its first sentence says what kind of thing it is); this corpus's documents are not "
                         "articles about one entity", structural=True)
    if len(answer_pool(ix, labels, params, with_articles=True)) < n:
        raise NoSubgraph(f"{cell.key}: fewer than {n} {cell.answer_type} entities in this corpus", structural=True)
    seeds = {kind: _seeds(ix, labels, kind, params) for kind in VALUE_KINDS}
    kinds = [kind for kind in VALUE_KINDS if len(seeds[kind]) >= n]
    if not kinds:
        raise NoSubgraph(f"{cell.key}: fewer than {n} {cell.answer_type} entities with a date or number"
                         " in their own article (and a kind of thing in its first sentence)", structural=True)
    # the seeds' keys as lists, built once per index (at 1M chunks a list per call cost milliseconds)
    seed_lists = {kind: _cached(ix, ("comparison-seed-list", labels, kind, params.answer_max_df),
                                lambda kind=kind: list(seeds[kind])) for kind in kinds}
    chunk_groups = _chunk_groups(ix, allowed, params)
    fail = Failures()

    def attempt(_: int):
        kind = rng.choice(kinds)
        valued = seeds[kind]
        first = rng.choice(seed_lists[kind])
        groups = [g for c in ix.ent_chunks[first] for g in chunk_groups[c] if g != first]
        if not groups:
            fail.add("candidate shares no chunk with a possible group")
            return None
        group = rng.choice(groups)
        members = _valued_members(ix, group, labels, kind, valued, params)
        if len(members) < n:
            fail.add(f"group has fewer than {n} {cell.answer_type} members with a {kind}")
            return None
        kind_of = ix.category(first)
        order = [first] + [e for e in rng.sample(list(members), len(members))
                           if e != first and ix.category(e) == kind_of]
        if len(order) < n:
            fail.add(f"fewer than {n} members of the group are of one kind (by their articles' first sentences)")
            return None
        chosen: list[int] = []
        chunks: list[int] = []
        roles: list[str] = []
        used: set[int] = set()
        for e in order:
            if e not in members or any(ix.related(e, other) for other in chosen):
                continue
            room = params.max_chunks - len(chunks) - (n - len(chosen) - 1)  # keep one chunk per later candidate
            props = [c for c in valued[e] if ix.chunk_doc[c] not in used]
            direct = [c for c in props if group in ix.chunk_ents[c] and ix.plain(c, group)]
            if direct:
                pair = [rng.choice(direct)]
            elif room >= 2 and props:
                prop = rng.choice(props)
                member = [c for c in members[e] if ix.chunk_doc[c] not in used and ix.chunk_doc[c] != ix.chunk_doc[prop]]
                if not member:
                    continue
                pair = [rng.choice(member), prop]
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
        if not _values_differ(ix, own, kind):
            fail.add(f"the candidates' passages give the same {kind} (one census year for all): nothing to compare")
            return None
        # fewer chunks read better: one chunk per candidate that also ties it to the group
        return -len(chunks), (group, kind, chosen, chunks, roles, own)

    found = best_of(attempt, params, ceiling=-n)
    if found is None:
        raise NoSubgraph(fail.reason(cell, params.max_tries))
    (group, kind, chosen, chunks, roles, own), tries = found
    values = {ix.ent_keys[e]: [ix.ent_name[v] for v in ix.values(c, {kind})]
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
