"""Subgraph selection: from a taxonomy cell to the chunks (and entity roles) a question rests on.

``select_subgraph(store_or_index, cell, lang, rng)`` looks up the cell's mechanic in the
taxonomy, runs its selector (``factory/graph/selectors/``) over the cached in-memory
``SelectionIndex`` and returns a ``Subgraph``, or raises ``NoSubgraph(reason)``;
``reason.structural`` is True when the corpus can never satisfy the cell (the loop
then marks the cell unsupported), False when only this random try failed.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from pydantic import ValidationError

from factory.graph.selectors.base import NoSubgraph, SelectionIndex, SelectorParams
from factory.graph.selectors.registry import SELECTORS
from factory.records import Cell, Subgraph

__all__ = ["NoSubgraph", "SelectionIndex", "SelectorParams", "SELECTORS", "select_subgraph", "unsupported_cells"]

_TAXONOMY: dict[str, Any] = {}
_TAXONOMY_LOCK = threading.Lock()


def _default_taxonomy() -> Any:
    from factory.taxonomy import load_taxonomy

    with _TAXONOMY_LOCK:
        if "default" not in _TAXONOMY:
            _TAXONOMY["default"] = load_taxonomy()
        return _TAXONOMY["default"]


def selector_params(mechanic_params: dict[str, Any], base: SelectorParams | None = None) -> SelectorParams:
    merged = {**(base or SelectorParams()).model_dump(), **mechanic_params}
    try:
        return SelectorParams(**merged)
    except ValidationError as exc:
        raise NoSubgraph(f"invalid selector params {mechanic_params}: {exc.errors()[0]['msg']}", structural=True) from exc


# a reselection after a known answer (or near a declined subgraph) draws this many more subgraphs;
# then the candidate keeps its verdict
REDRAWS = 5
# a reselection sharing at least this share of its chunks with a subgraph the candidate reselected
# away from (its composer declined it, or a model knew its answer) is drawn again: it asks nearly
# the same thing. In the reference draws 10-15 (draw 10's rewrite left out: its reselections are
# draw 10's subgraphs), 9 English reselections of the old loop did, mostly the same three sports
# leagues or universities again, and all 9 were declined; the others 209 of 282 (bench/declined_overlap.py)
DECLINED_OVERLAP = 0.5


def near(chunks: frozenset[str], declined: set[frozenset[str]]) -> bool:
    """Does ``chunks`` share at least ``DECLINED_OVERLAP`` of its chunks with a declined subgraph?"""
    return bool(chunks) and any(len(chunks & old) >= DECLINED_OVERLAP * len(chunks) for old in declined)


def select_subgraph(
    store: Any,
    cell: Cell,
    lang: str,
    rng: random.Random,
    *,
    avoid_chunk_sets: set[frozenset[str]] | None = None,
    avoid_answers: set[str] | None = None,
    declined: set[frozenset[str]] | None = None,
    taxonomy: Any = None,
    params: SelectorParams | None = None,
) -> Subgraph:
    """Select a subgraph for ``cell``; ``store`` is a Store or a loaded SelectionIndex.

    ``taxonomy`` defaults to the repository's; ``params`` gives the defaults that the
    mechanic's ``params`` in the taxonomy override (from settings ``compose.selector``).
    ``avoid_answers`` are answer entity keys a model already knows without evidence: a
    subgraph with one of them is drawn again, ``REDRAWS`` times at most; so is one
    ``near`` a support set of ``declined`` (the subgraphs the candidate reselected away from,
    for a decline or a known answer).
    """
    start = time.perf_counter()
    index = store if isinstance(store, SelectionIndex) else SelectionIndex.load(store, lang)
    if index.lang != lang:
        raise ValueError(f"the selection index is for {index.lang!r}, not {lang!r}")
    spec = (taxonomy or _default_taxonomy()).spec(cell)
    selector = SELECTORS.get(spec.mechanic.selector)
    if selector is None:
        raise NoSubgraph(f"{cell.key}: unknown selector {spec.mechanic.selector!r}", structural=True)
    if not index.chunk_ids:
        raise NoSubgraph(f"{cell.key}: the store has no entity mentions in {lang!r} (run the annotation first)",
                         structural=True)
    labels = frozenset(spec.answer_type.labels)
    avoid = set(avoid_chunk_sets or ())
    merged = selector_params(spec.mechanic.params, params)
    known_drawn = near_drawn = 0
    for _ in range(1 + REDRAWS):
        subgraph = selector(index, cell, labels, merged, rng, avoid)
        known = subgraph.answer_entity is not None and subgraph.answer_entity in (avoid_answers or ())
        repeat = near(frozenset(subgraph.chunk_ids), declined or set())
        if not known and not repeat:
            subgraph.figures["select_ms"] = round((time.perf_counter() - start) * 1000, 3)
            if subgraph.answer_entity is not None and merged.avoid_refused and index.refused:
                subgraph.figures["refused_answers"] = len(index.refused)  # what the draw was kept from
            return subgraph
        known_drawn += known
        near_drawn += repeat
        avoid.add(frozenset(subgraph.chunk_ids))
    # the reason counts each cause, so a user reading it knows whether a decline or a known answer ended it
    causes = []
    if known_drawn:
        causes.append(f"{known_drawn} with an answer a model already knows without evidence "
                      f"({', '.join(sorted(avoid_answers or ()))})")
    if near_drawn:
        causes.append(f"{near_drawn} sharing {DECLINED_OVERLAP:.0%} or more of its passages with a subgraph "
                      f"this candidate declined")
    raise NoSubgraph(f"{cell.key}: no subgraph left in {1 + REDRAWS} draws: {'; '.join(causes)}")


def unsupported_cells(store: Any, cells: list[Cell], lang: str, *, taxonomy: Any = None, seed: int = 0,
                      tries: int = 3, params: SelectorParams | None = None) -> dict[str, str]:
    """Cells the corpus cannot support (structurally, or no subgraph in ``tries`` attempts)."""
    out: dict[str, str] = {}
    for cell in cells:
        rng = random.Random(f"{seed}:{cell.key}")
        reason = None
        for _ in range(tries):
            try:
                select_subgraph(store, cell, lang, rng, taxonomy=taxonomy, params=params)
                reason = None
                break
            except NoSubgraph as exc:
                reason = exc.reason
                if exc.structural:
                    break
        if reason is not None:
            out[cell.key] = reason
    return out

