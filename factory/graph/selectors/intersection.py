"""Intersection of independent constraints: one answer entity, k constraint chunks.

Each constraint chunk comes from a different document and contributes one constraint
entity; each constraint alone must fit some other entity of the answer's type too (it
co-occurs with one), each chunk names another thing of the answer's kind beside it (read
alone, it leaves a choice), and no chunk holds two constraints together with the answer,
so only the intersection of separate searches pins the answer down. A clue meets the
answer in its own document only: where a passage of another document also names the two,
that link is written out elsewhere, and the clue alone gives the answer away (Kant's birthplace).
"""

from __future__ import annotations

import random

from factory.graph.selectors.base import (
    NAMED_LABELS,
    Failures,
    NoSubgraph,
    SelectionIndex,
    SelectorParams,
    best_of,
    chunks_in_new_docs,
    make_subgraph,
)
from factory.graph.selectors.chain import answer_pool
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


def _rival_in(ix: SelectionIndex, chunk: int, answer: int) -> bool:
    """Does the chunk, read alone, leave a choice: another thing of the answer's kind beside it?
    A passage on Newton that names Leibniz and no other person gives him away with any clue
    it holds; one that also names Hooke needs the second clue. Values are exempt: a passage's
    dates are each tied to their own events, and a clue picks one of them anyway."""
    label = ix.ent_label[answer]
    if label not in NAMED_LABELS:
        return True
    return any(e != answer and ix.ent_label[e] == label and ix.plain(chunk, e) and not ix.related(e, answer)
               for e in ix.chunk_ents[chunk])


def _meets_only_in(ix: SelectionIndex, x: int, answer: int, chunk: int) -> bool:
    """Do the clue and the answer share chunks of the clue chunk's document only? Over every
    labelled reference draw (both languages, draw 13 included) the other case marks 19
    with no honest question that no other rule refused (Anhui by 'Jiangsu', the Kuomintang by
    'Sun Yat-sen', «ЦРУ» by «Афганистан»: each clue alone gives the answer) and one with an
    honest question (1868, which a third article also gives beside the Meiji Restoration)."""
    doc = ix.chunk_doc[chunk]
    return all(ix.chunk_doc[c] == doc for c in set(ix.ent_chunks[x]).intersection(ix.ent_chunks[answer]))


def _constraint_ok(ix: SelectionIndex, x: int, answer: int, taken: list[int], params: SelectorParams) -> bool:
    """A named thing or a dated fact, not a hub, not another name of the answer, not taken."""
    label = ix.ent_label[x]
    return (
        x != answer and x not in taken and ix.ent_df[x] <= ix.bridge_max_df(params)
        and ((label in NAMED_LABELS and ix.nameworthy(x)) or (label == "date" and ix.good_value(x)))
        and not ix.related(x, answer) and not any(ix.related(x, t) for t in taken)
    )


def select_intersection(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                        rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    k = params.constraints
    every = answer_pool(ix, labels, params)
    pool = ix.pool(("answers", labels, k, params.answer_max_df), lambda: [e for e in every if ix.ent_df[e] >= k])
    if not pool:
        raise NoSubgraph(f"{cell.key}: no {cell.answer_type} entity occurs in {k}..{params.answer_max_df} documents",
                         structural=True)
    if len(every) < 2:
        raise NoSubgraph(f"{cell.key}: a constraint can only be ambiguous with two {cell.answer_type} entities; "
                         "the corpus has fewer", structural=True)
    fail = Failures()

    def attempt(_: int):
        answer = rng.choice(pool)
        picked: list[int] = []
        constraints: list[int] = []
        # the answer and each clue are what their chunk is about, as the thing their label says:
        # not a cinema named Тула beside the town, not the agency that reported the news
        for c in chunks_in_new_docs(ix, ix.ent_chunks[answer], set(), rng,
                                    lambda c: ix.plain(c, answer) and _rival_in(ix, c, answer)):
            options = [x for x in ix.chunk_ents[c]
                       if _constraint_ok(ix, x, answer, constraints, params) and ix.plain(c, x)
                       and _meets_only_in(ix, x, answer, c)]
            rng.shuffle(options)
            options.sort(key=lambda x: x != ix.about(c))  # the chunk's subject makes the clearest clue
            for x in options:
                if _ambiguous(ix, x, answer, labels):
                    picked.append(c)
                    constraints.append(x)
                    break
            if len(picked) == k:
                break
        if len(picked) < k:
            fail.add(f"answer lacks {k} documents each with a constraint that alone also fits another {cell.answer_type}")
            return None
        if any(sum(x in ix.chunk_ents[c] for x in constraints) >= 2 for c in ix.ent_chunks[answer]):
            fail.add("one chunk states two constraints with the answer")
            return None
        if frozenset(ix.chunk_ids[c] for c in picked) in avoid:
            fail.add("chunk set already used")
            return None
        score = sum(ix.about(c) in (answer, x) for c, x in zip(picked, constraints))
        return score, (answer, picked, constraints)

    found = best_of(attempt, params)
    if found is None:
        raise NoSubgraph(fail.reason(cell, params.max_tries))
    (answer, picked, constraints), tries = found
    figures = {
        "selector": "intersection",
        "answer_doc_freq": ix.ent_df[answer],
        "constraint_doc_freq": [ix.ent_df[x] for x in constraints],
        "about_links": sum(ix.about(c) in (answer, x) for c, x in zip(picked, constraints)),
        "tries": tries,
    }
    return make_subgraph(ix, cell, picked, ["constraint"] * k, answer=answer, bridges=[],
                         constraints=constraints, figures=figures)
