"""A cell's first draft: subgraph, fact sheet, composed draft. No validation.

The generation loop runs this for every candidate, then judges the draft
(``factory.generate.judge``); ``factory compose`` runs it alone, to look at the composer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from factory.compose.composer import compose, searchable_words
from factory.compose.facts import ComposeError, build_fact_sheet, load_chunk_texts
from factory.graph.select import NoSubgraph, SelectorParams, select_subgraph
from factory.records import Cell, Draft, FactSheet, Subgraph
from factory.taxonomy import CellSpec, Taxonomy, candidate_rng


@dataclass
class Drafted:
    cell: Cell
    subgraph: Subgraph | None = None
    sheet: FactSheet | None = None
    spec: CellSpec | None = None
    draft: Draft | None = None
    chunk_texts: dict[str, str] = field(default_factory=dict)
    searchable: dict[str, list[str]] = field(default_factory=dict)  # hidden passage -> its search words
    stopped: str | None = None  # the step that failed: select | facts
    reason: str = ""  # why it stopped
    structural: bool = False  # select: the corpus can never satisfy the cell
    raw: str = ""  # facts: what the model said


def selector_params(settings: Any) -> SelectorParams:
    """Selector defaults from ``settings.compose`` (the taxonomy's mechanic params override them)."""
    c = settings.compose
    return SelectorParams(bridge_min_df=c.bridge_min_df, bridge_max_df=c.bridge_max_df,
                          bridge_max_share=c.bridge_max_share, answer_max_df=c.answer_max_df,
                          article_answers=c.article_answers, avoid_refused=c.avoid_refused_answers,
                          max_chunks=c.max_chunks, max_tries=c.select_tries)


def selection_rng(seed: int, index: int, reselection: int = 0) -> random.Random:
    """The RNG candidate ``index`` of a run selects its subgraph with: stream "select", then
    "select-N" for its N-th reselection (after a decline or a known answer). The reference draws
    (``factory.reference.draw``) use it too, so they draw exactly what a run draws."""
    return candidate_rng(seed, index, "select" if reselection == 0 else f"select-{reselection}")


def select_for(selection: Any, cell: Cell, lang: str, settings: Any, *, taxonomy: Taxonomy, rng: random.Random,
               avoid: set[frozenset[str]] | None = None, avoid_answers: set[str] | None = None,
               declined: set[frozenset[str]] | None = None) -> Subgraph:
    """A subgraph for ``cell`` with the run's selector settings, none of the ``avoid`` support
    sets, no answer of ``avoid_answers``, not near a ``declined`` one; raises ``NoSubgraph``."""
    return select_subgraph(selection, cell, lang, rng, taxonomy=taxonomy, avoid_chunk_sets=avoid,
                           avoid_answers=avoid_answers, declined=declined, params=selector_params(settings))


def draft_for_cell(
    selection: Any,
    store: Any,
    taxonomy: Taxonomy,
    cell: Cell,
    llm: Any,
    settings: Any,
    *,
    lang: str,
    candidate_id: str,
    rng: random.Random,
    avoid: set[frozenset[str]] | None = None,
    avoid_answers: set[str] | None = None,
    declined: set[frozenset[str]] | None = None,
    attempt: int = 0,
    chunks: Any = None,
    vocabulary: Any = None,
) -> Drafted:
    """Select a subgraph for ``cell`` (none of the ``avoid`` support sets, no answer of
    ``avoid_answers``, none near a ``declined`` subgraph), state its facts, compose.

    ``chunks`` (a ``ChunkSource``, e.g. the run's validation context's) gives the passages'
    texts; without it they are read from ``store``. ``vocabulary`` (the fixed BM25 index)
    tells the composer the words that would find each hidden passage."""
    out = Drafted(cell=cell)
    try:
        out.subgraph = select_for(selection, cell, lang, settings, taxonomy=taxonomy, rng=rng, avoid=avoid,
                                  avoid_answers=avoid_answers, declined=declined)
    except NoSubgraph as exc:
        out.stopped, out.reason, out.structural = "select", exc.reason, exc.structural
        return out
    c = settings.compose
    out.spec = taxonomy.spec(cell, lang)
    ids = out.subgraph.chunk_ids
    out.chunk_texts = chunks.texts(ids) if chunks is not None else load_chunk_texts(store, ids)
    try:
        out.sheet = build_fact_sheet(out.subgraph, out.chunk_texts, llm, lang, candidate_id,
                                     temperature=c.facts_temperature, max_tokens=c.max_tokens)
    except ComposeError as exc:
        out.stopped, out.reason, out.raw = "facts", exc.reason, exc.raw
        return out
    out.searchable = searchable_words(out.subgraph, out.chunk_texts, lang, vocabulary)
    out.draft = compose(out.sheet, out.spec, llm, lang, candidate_id, attempt, temperature=c.compose_temperature,
                        max_tokens=c.max_tokens, searchable=out.searchable)
    return out
