"""Chain-shaped selectors: entity-chain traversal, reasoning over time, a calculation.

All three yield e0 -c1- b1 -c2- b2 ... -ck- answer: consecutive chunks share a bridge
entity, every chunk comes from a different document, bridges are neither hubs nor
singletons (document-frequency bounds), no chunk before the last mentions the answer,
and the named start entity never shares a chunk with the answer (otherwise one search
would find both). Chain and temporal walk backwards from a random answer of the cell's
type (so rare types are found as easily as common ones); the calculation walks forward
from a bridge, since its answer is computed rather than found.
"""

from __future__ import annotations

import random
from typing import Callable

from factory.graph.selectors.base import (
    VALUE_LABELS,
    Failures,
    NoSubgraph,
    SelectionIndex,
    SelectorParams,
    chunks_in_new_docs,
    make_subgraph,
)
from factory.records import Cell, Subgraph

Need = Callable[[int], bool]


def _bridge_pool(ix: SelectionIndex, params: SelectorParams, need_name: str, need: Need | None) -> list[int]:
    """Bridge candidates with chunks in at least two documents that satisfy ``need``."""
    base = ix.bridge_pool(params)
    if need is None:
        return base

    def build() -> list[int]:
        out = []
        for e in base:
            docs = {ix.chunk_doc[c] for c in ix.ent_chunks[e] if need(c)}
            if len(docs) >= 2:
                out.append(e)
        return out

    return ix.pool(("bridge", params.bridge_min_df, params.bridge_max_df, need_name), build)


def walk_chain(ix: SelectionIndex, rng: random.Random, params: SelectorParams, pool: list[int],
               need: Need | None, fail: Failures) -> tuple[list[int], list[int]] | None:
    """A random path of ``params.hops`` chunks from different documents and its bridges."""
    allowed = ix.bridge_set(params)
    first = rng.choice(pool)
    chunks = chunks_in_new_docs(ix, ix.ent_chunks[first], set(), rng, need)
    if len(chunks) < 2:
        fail.add("bridge without two qualifying chunks in different documents")
        return None
    path, bridges = chunks[:2], [first]
    docs = {ix.chunk_doc[c] for c in path}
    while len(path) < params.hops:
        options = [e for e in ix.chunk_ents[path[-1]] if e in allowed and e not in bridges]
        rng.shuffle(options)
        for e in options:
            nxt = chunks_in_new_docs(ix, ix.ent_chunks[e], docs, rng, need)
            if nxt:
                path.append(nxt[0])
                bridges.append(e)
                docs.add(ix.chunk_doc[nxt[0]])
                break
        else:
            fail.add(f"chain could not be extended to {params.hops} chunks")
            return None
    return path, bridges


def _start(ix: SelectionIndex, rng: random.Random, path: list[int], bridges: list[int],
           avoid_with: list[int]) -> int | None:
    """A named entity of the first chunk that shares no chunk with any of ``avoid_with``."""
    blocked = {c for e in avoid_with for c in ix.ent_chunks[e]}
    options = [
        e for e in ix.chunk_ents[path[0]]
        if e not in bridges and e not in avoid_with and ix.ent_label[e] not in VALUE_LABELS
        and blocked.isdisjoint(ix.ent_chunks[e])
    ]
    return rng.choice(options) if options else None


def _roles(n: int) -> list[str]:
    return ["start"] + ["hop"] * (n - 2) + ["answer"]


def select_chain(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                 rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    return _chain_like(ix, cell, labels, params, rng, avoid, need_name="any", need=None, mechanic="chain")


def select_temporal(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                    rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    """A chain whose chunks all carry dates: the bridge is the entity whose history changes."""
    dated = frozenset({"date"})
    return _chain_like(ix, cell, labels, params, rng, avoid, need_name="date",
                       need=lambda c: ix.has_label(c, dated), mechanic="temporal")


def answer_pool(ix: SelectionIndex, labels: frozenset[str], params: SelectorParams) -> list[int]:
    return ix.pool(("answer", labels, params.answer_max_df),
                   lambda: [e for e, lab in enumerate(ix.ent_label) if lab in labels and ix.ent_df[e] <= params.answer_max_df])


def walk_back(ix: SelectionIndex, rng: random.Random, params: SelectorParams, answer: int, need: Need | None,
              fail: Failures) -> tuple[list[int], list[int]] | None:
    """Answer first: a chunk holding the answer, then bridges backwards, each to a chunk in a
    new document that does not mention the answer (so no earlier hop gives it away)."""
    allowed = ix.bridge_set(params)
    ok_last = [c for c in ix.ent_chunks[answer] if need is None or need(c)]
    if not ok_last:
        fail.add("answer has no qualifying chunk")
        return None
    path = [rng.choice(ok_last)]
    bridges: list[int] = []
    docs = {ix.chunk_doc[path[0]]}

    def earlier_ok(c: int) -> bool:
        return answer not in ix.chunk_ents[c] and (need is None or need(c))

    while len(path) < params.hops:
        options = [e for e in ix.chunk_ents[path[0]] if e in allowed and e != answer and e not in bridges]
        rng.shuffle(options)
        for e in options:
            prev = chunks_in_new_docs(ix, ix.ent_chunks[e], docs, rng, earlier_ok)
            if prev:
                path.insert(0, prev[0])
                bridges.insert(0, e)
                docs.add(ix.chunk_doc[prev[0]])
                break
        else:
            fail.add("no bridge (2..max documents) leads from the answer's chunk to a chunk without the answer"
                     if not bridges else f"chain could not be extended to {params.hops} chunks")
            return None
    return path, bridges


def _chain_like(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                rng: random.Random, avoid: set[frozenset[str]], *, need_name: str, need: Need | None,
                mechanic: str) -> Subgraph:
    pool = answer_pool(ix, labels, params)
    if not pool:
        raise NoSubgraph(f"{cell.key}: no {cell.answer_type} entity in this corpus (labels {sorted(labels)}, "
                         f"at most {params.answer_max_df} documents)", structural=True)
    if not _bridge_pool(ix, params, need_name, need):
        raise NoSubgraph(
            f"{cell.key}: no bridge entity occurs in {params.bridge_min_df}..{params.bridge_max_df} documents"
            + (" in chunks with dates" if need_name == "date" else ""),
            structural=True,
        )
    fail = Failures()
    for tries in range(1, params.max_tries + 1):
        answer = rng.choice(pool)
        walked = walk_back(ix, rng, params, answer, need, fail)
        if walked is None:
            continue
        path, bridges = walked
        start = _start(ix, rng, path, bridges, [answer])
        if start is None:
            fail.add("no named start entity that never shares a chunk with the answer")
            continue
        if frozenset(ix.chunk_ids[c] for c in path) in avoid:
            fail.add("chunk set already used")
            continue
        figures = {
            "selector": mechanic,
            "start_entity": ix.ent_keys[start],
            "bridge_doc_freq": [ix.ent_df[b] for b in bridges],
            "tries": tries,
            "_describe": [start],
        }
        if need_name == "date":
            figures["dates"] = {ix.chunk_ids[c]: [ix.ent_name[e] for e in ix.ents_with(c, {"date"})] for c in path}
        return make_subgraph(ix, cell, path, _roles(len(path)), answer=answer, bridges=bridges,
                             constraints=[start], figures=figures)
    raise NoSubgraph(fail.reason(cell, params.max_tries))


def select_calculation(ix: SelectionIndex, cell: Cell, labels: frozenset[str], params: SelectorParams,
                       rng: random.Random, avoid: set[frozenset[str]]) -> Subgraph:
    """Two (or more) linked chunks from different documents, each holding a value of one kind
    (dates: a difference in years; numbers: a sum, difference or ratio)."""
    kinds = []
    for kind in ("date", "number"):
        one = frozenset({kind})
        pool = _bridge_pool(ix, params, kind, lambda c, one=one: ix.has_label(c, one))
        if pool:
            kinds.append((kind, one, pool))
    if not kinds:
        raise NoSubgraph(f"{cell.key}: no bridge links two chunks that both hold dates or numbers", structural=True)
    fail = Failures()
    for tries in range(1, params.max_tries + 1):
        kind, one, pool = rng.choice(kinds)
        walked = walk_chain(ix, rng, params, pool, lambda c: ix.has_label(c, one), fail)
        if walked is None:
            continue
        path, bridges = walked
        # one operand per chunk, each a value the other chunks do not state
        operands = []
        for c in path:
            others = {e for o in path if o != c for e in ix.chunk_ents[o]}
            values = [e for e in ix.ents_with(c, one) if e not in others]
            if not values:
                break
            operands.append(rng.choice(values))
        if len(operands) < len(path):
            fail.add(f"the chunks share their {kind} values instead of holding different ones")
            continue
        start = _start(ix, rng, path, bridges, [])
        if start is None:
            fail.add("no named start entity in the first chunk")
            continue
        if frozenset(ix.chunk_ids[c] for c in path) in avoid:
            fail.add("chunk set already used")
            continue
        figures = {
            "selector": "calculation",
            "value_kind": kind,
            "operands": [{"chunk_id": ix.chunk_ids[c], "value": ix.ent_name[e]} for c, e in zip(path, operands)],
            "start_entity": ix.ent_keys[start],
            "bridge_doc_freq": [ix.ent_df[b] for b in bridges],
            "tries": tries,
            "_describe": [start] + operands,
        }
        return make_subgraph(ix, cell, path, ["operand"] * len(path), answer=None, bridges=bridges,
                             constraints=[start], figures=figures)
    raise NoSubgraph(fail.reason(cell, params.max_tries))
