"""Intersection of independent constraints: one answer entity, k constraint chunks.

Each constraint chunk comes from a different document and contributes one constraint
entity; each constraint alone must fit some other entity of the answer's type too (it
co-occurs with one), and no chunk holds two constraints together with the answer, so
only the intersection of separate searches pins the answer down.
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


def _ambiguous(ix: SelectionIndex, constraint: int, answer: int, labels: frozenset[str]) -> bool:
    """Does another entity of the answer's type share a chunk with the constraint?"""
    memo = ix.memo.setdefault(("typed-neighbours", labels), {})
    found = memo.get(constraint)
    if found is None:  # two such neighbours are enough to answer for any answer
        found = []
        for c in ix.ent_chunks[constraint]:
            for e in ix.chunk_ents[c]:
                if e != constraint and ix.ent_label[e] in labels and e not in found:
                    found.append(e)
                    if len(found) == 2:
                        break
            if len(found) == 2:
                break
        memo[constraint] = found
    return any(e != answer for e in found)


def select_intersection(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                        rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    k = params.constraints
    pool = ix.pool(
        ("answers", labels, k, params.answer_max_df),
        lambda: [e for e, lab in enumerate(ix.ent_label) if lab in labels and k <= ix.ent_df[e] <= params.answer_max_df],
    )
    if not pool:
        raise NoSubgraph(f"{cell.key}: no {cell.answer_type} entity occurs in {k}..{params.answer_max_df} documents",
                         structural=True)
    if len(ix.pool(("answer", labels, params.answer_max_df), lambda: [
            e for e, lab in enumerate(ix.ent_label) if lab in labels and ix.ent_df[e] <= params.answer_max_df])) < 2:
        raise NoSubgraph(f"{cell.key}: a constraint can only be ambiguous with two {cell.answer_type} entities; "
                         "the corpus has fewer", structural=True)
    fail = Failures()
    for tries in range(1, params.max_tries + 1):
        answer = rng.choice(pool)
        picked: list[int] = []
        constraints: list[int] = []
        for c in chunks_in_new_docs(ix, ix.ent_chunks[answer], set(), rng):
            options = [
                x for x in ix.chunk_ents[c]
                if x != answer and x not in constraints and ix.ent_label[x] != "number"
                and ix.ent_df[x] <= params.bridge_max_df
            ]
            rng.shuffle(options)
            for x in options:
                if _ambiguous(ix, x, answer, labels):
                    picked.append(c)
                    constraints.append(x)
                    break
            if len(picked) == k:
                break
        if len(picked) < k:
            fail.add(f"answer lacks {k} documents each with a constraint that alone also fits another {cell.answer_type}")
            continue
        together = [c for c in ix.ent_chunks[answer] if sum(x in ix.chunk_ents[c] for x in constraints) >= 2]
        if together:
            fail.add("one chunk states two constraints with the answer")
            continue
        if frozenset(ix.chunk_ids[c] for c in picked) in avoid:
            fail.add("chunk set already used")
            continue
        figures = {
            "selector": "intersection",
            "answer_doc_freq": ix.ent_df[answer],
            "constraint_doc_freq": [ix.ent_df[x] for x in constraints],
            "tries": tries,
        }
        return make_subgraph(ix, cell, picked, ["constraint"] * k, answer=answer, bridges=[],
                             constraints=constraints, figures=figures)
    raise NoSubgraph(fail.reason(cell, params.max_tries))
