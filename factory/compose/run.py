"""One candidate from cell to draft, with no validation: what `factory compose` shows.

The generation loop has its own version of these steps (it validates, prunes and
revises between them); this one only strings them together and says where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factory.compose.common import ComposeError
from factory.compose.composer import compose
from factory.compose.facts import build_fact_sheet, load_chunk_texts
from factory.graph.select import NoSubgraph, SelectorParams, select_subgraph
from factory.records import Cell, Draft, FactSheet, Subgraph
from factory.taxonomy import Taxonomy, candidate_rng


@dataclass
class Composed:
    index: int
    cell: Cell
    subgraph: Subgraph | None = None
    sheet: FactSheet | None = None
    draft: Draft | None = None
    chunk_texts: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None  # the stage that failed: select | facts
    reason: str = ""
    structural: bool = False


def selector_params(settings: Any) -> SelectorParams:
    """Selector defaults from ``settings.compose`` (the taxonomy's mechanic params override them)."""
    c = settings.compose
    return SelectorParams(bridge_min_df=c.bridge_min_df, bridge_max_df=c.bridge_max_df,
                          bridge_max_share=c.bridge_max_share, answer_max_df=c.answer_max_df,
                          article_answers=c.article_answers, max_chunks=c.max_chunks, max_tries=c.select_tries)


def compose_candidate(
    index_or_store: Any,
    store: Any,
    taxonomy: Taxonomy,
    cell: Cell,
    llm: Any,
    lang: str,
    seed: int,
    candidate_index: int,
    *,
    params: SelectorParams | None = None,
    avoid: set[frozenset[str]] | None = None,
    facts_temperature: float = 0.2,
    compose_temperature: float = 0.7,
    max_tokens: int = 0,
    run_tag: str = "compose",
) -> Composed:
    out = Composed(index=candidate_index, cell=cell)
    rng = candidate_rng(seed, candidate_index, "select")
    try:
        out.subgraph = select_subgraph(index_or_store, cell, lang, rng, avoid_chunk_sets=avoid, taxonomy=taxonomy,
                                       params=params)
    except NoSubgraph as exc:
        out.stopped, out.reason, out.structural = "select", exc.reason, exc.structural
        return out
    candidate_id = f"{run_tag}-{seed}-{candidate_index}"
    out.chunk_texts = load_chunk_texts(store, out.subgraph.chunk_ids)
    try:
        out.sheet = build_fact_sheet(out.subgraph, out.chunk_texts, llm, lang, candidate_id,
                                     temperature=facts_temperature, max_tokens=max_tokens)
    except ComposeError as exc:
        out.stopped, out.reason = "facts", exc.reason + (f" | raw: {exc.raw[:300]!r}" if exc.raw else "")
        return out
    out.draft = compose(out.sheet, taxonomy.spec(cell, lang), llm, lang, candidate_id,
                        temperature=compose_temperature, max_tokens=max_tokens)
    return out
