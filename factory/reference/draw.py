"""Drawing the reference candidates as a generation run draws them, and filing the
writer's first drafts (worksheet labels P1..Pn) into them."""

from __future__ import annotations

from typing import Any, Iterable

from pydantic import ValidationError

from factory.errors import FactoryError
from factory.records import ReasoningStep
from factory.reference.records import ReferenceCandidate, ReferenceDraft


def draw_reference(store: Any, lang: str, n: int, seed: int, settings: Any, taxonomy: Any = None
                   ) -> list[ReferenceCandidate]:
    """The first ``n`` candidates with a subgraph, drawn as a generation run draws them:
    the run's cell sampler (nothing accepted yet) and each candidate's own selection RNG;
    a support set is never drawn twice. Selection failures are kept, in order, as
    ``no_subgraph`` candidates (they never reach a composer)."""
    from factory.generate.drafting import select_for, selection_rng
    from factory.graph.select import NoSubgraph, SelectionIndex
    from factory.taxonomy import CellSampler, NoCellsLeft, load_taxonomy

    taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
    sampler = CellSampler(taxonomy, seed, lang)
    selection = SelectionIndex.load(store, lang)
    used: set[frozenset[str]] = set()
    out: list[ReferenceCandidate] = []
    index = 0
    while sum(c.status != "no_subgraph" for c in out) < n:
        try:
            cell = sampler.draw(index)
        except NoCellsLeft as exc:
            raise FactoryError(f"the sampler has no cells left after {index} draws: {exc}") from exc
        try:
            subgraph = select_for(selection, cell, lang, settings, taxonomy=taxonomy, rng=selection_rng(seed, index),
                                  avoid=used)
        except NoSubgraph as exc:
            if exc.structural:
                sampler.mark_unsupported(cell, exc.reason)
            out.append(ReferenceCandidate(index=index, seed=seed, lang=lang, cell=cell.key, status="no_subgraph",
                                          select_failure=exc.reason))
        else:
            used.add(frozenset(subgraph.chunk_ids))
            out.append(ReferenceCandidate(index=index, seed=seed, lang=lang, cell=cell.key, subgraph=subgraph))
        index += 1
    return out


def unwritten(candidates: Iterable[ReferenceCandidate]) -> list[ReferenceCandidate]:
    """The candidates as drawn, before any writer: no drafts, verdicts or label (a candidate the
    selector found nothing for stays so). For writing a draw again under new instructions."""
    return [c if c.subgraph is None else c.model_copy(update={"status": "drafted", "writer_note": "", "drafts": [],
                                                              "verdicts": []}) for c in candidates]


def declined(cand: ReferenceCandidate) -> bool:
    """Did its writer decline the subgraph (no honest question) or give up on revising it? The
    composer says so in the generation loop, which then reselects (``generate.judge``)."""
    return cand.status == "no_honest_question" or gave_up(cand)


def remember_refusals(store: Any, candidates: Iterable[ReferenceCandidate], source: str) -> int:
    """Write the fixed answers of the declined candidates (``declined``) to the store's
    refused_answers, as the generation loop writes its composer's declines: the store then
    holds what a factory that had drafted these candidates would remember. ``source`` names
    the set (run id ``reference:SOURCE``). Returns the rows written (a rerun adds none)."""
    from factory.compose.passages import entity_name
    from factory.store.refused import refusal_row

    have = {(r["entity_key"], r["draft_id"]) for r in store.query(
        "SELECT entity_key, draft_id FROM refused_answers WHERE run_id = ?", [f"reference:{source}"])}
    rows = []
    for c in candidates:
        sub = c.subgraph
        if sub is None or not sub.answer_entity or not declined(c):
            continue
        draft_id = f"{source}-{c.index:03d}"
        if (sub.answer_entity, draft_id) in have:
            continue
        rows.append(refusal_row(c.lang, sub.answer_entity, reason="no_honest_question",
                                name=entity_name(sub, sub.answer_entity), cell=c.cell, note=c.writer_note,
                                candidate_id=draft_id, draft_id=draft_id, run_id=f"reference:{source}"))
    if rows:
        store.append("refused_answers", rows)
    return len(rows)


def reselect_reference(rounds: list[list[ReferenceCandidate]], store: Any, lang: str, settings: Any,
                       taxonomy: Any = None, drawn: list[ReferenceCandidate] = ()) -> list[ReferenceCandidate]:
    """The next subgraph for each candidate whose latest subgraph (``rounds``: the draw, then
    each reselection round so far) was declined, drawn as the generation loop draws it after
    its composer declines: the same cell, the candidate's own RNG for that reselection
    (``select-N``, N the round), away from every support set tried in the draw and from every
    answer the candidate declined. In index order; ``no_subgraph`` where none is left.
    ``drawn``: this round's candidates drawn before (a revision's give-up declines a candidate
    later than its first draft): kept out, their support sets avoided. Like the loop, no
    reselection mostly shares the passages of a subgraph its candidate declined."""
    from factory.generate.drafting import select_for, selection_rng
    from factory.graph.select import NoSubgraph, SelectionIndex
    from factory.records import Cell
    from factory.taxonomy import load_taxonomy

    taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
    selection = SelectionIndex.load(store, lang)
    used = {frozenset(c.subgraph.chunk_ids) for r in [*rounds, drawn] for c in r if c.subgraph is not None}
    done = {c.index for c in drawn}
    latest: dict[int, ReferenceCandidate] = {}
    known: dict[int, set[str]] = {}
    tried: dict[int, set[frozenset[str]]] = {}
    for r in rounds:
        for c in r:
            latest[c.index] = c
            if c.subgraph is not None and declined(c):
                tried.setdefault(c.index, set()).add(frozenset(c.subgraph.chunk_ids))
                if c.subgraph.answer_entity:
                    known.setdefault(c.index, set()).add(c.subgraph.answer_entity)
    n = len(rounds)  # a candidate's N-th reselection follows N rounds (the draw is round 1)
    out: list[ReferenceCandidate] = []
    for index in sorted(latest):
        cand = latest[index]
        if cand.subgraph is None or not declined(cand) or index in done:
            continue
        try:
            subgraph = select_for(selection, Cell.parse(cand.cell), lang, settings, taxonomy=taxonomy,
                                  rng=selection_rng(cand.seed, index, n), avoid=set(used),
                                  avoid_answers=known.get(index, set()), declined=tried.get(index, set()))
        except NoSubgraph as exc:
            out.append(ReferenceCandidate(index=index, seed=cand.seed, lang=lang, cell=cand.cell, status="no_subgraph",
                                          select_failure=exc.reason))
            continue
        used.add(frozenset(subgraph.chunk_ids))
        out.append(ReferenceCandidate(index=index, seed=cand.seed, lang=lang, cell=cand.cell, subgraph=subgraph))
    return out


def attach_first_drafts(candidates: list[ReferenceCandidate], rows: Iterable[dict[str, Any]]) -> list[str]:
    """Put a writer's first drafts (passage labels P1..Pn, as on the worksheets) into the
    candidates; returns problems (unknown index, label or status), nothing is guessed."""
    by_index = {c.index: c for c in candidates}
    problems: list[str] = []
    for row in rows:
        cand = by_index.get(row.get("index"))
        if cand is None or cand.subgraph is None:
            problems.append(f"index {row.get('index')}: no candidate with a subgraph")
            continue
        if cand.drafts or cand.status == "no_honest_question":
            problems.append(f"index {cand.index}: already has its first draft")
            continue
        cand.writer_note = row.get("writer_note", "")
        if row.get("status") == "no_honest_question":
            cand.status = "no_honest_question"
            continue
        _append_draft(cand, row, problems)
    return problems


def attach_revisions(candidates: list[ReferenceCandidate], rows: Iterable[dict[str, Any]]) -> list[str]:
    """Add a writer's revision (one row per candidate, labels P1..Pn, ``note`` saying what it
    changed) after the candidate's latest draft; the drafts before it keep their verdicts."""
    by_index = {c.index: c for c in candidates}
    problems: list[str] = []
    for row in rows:
        cand = by_index.get(row.get("index"))
        if cand is None or cand.subgraph is None or not cand.drafts:
            problems.append(f"index {row.get('index')}: no drafted candidate to revise")
            continue
        if len(cand.verdicts) < len(cand.drafts):
            problems.append(f"index {cand.index}: its latest draft has no recorded verdict yet")
            continue
        if row.get("give_up"):  # the writer found no honest revision: the candidate stays refused
            cand.writer_note = (cand.writer_note + " " if cand.writer_note else "") + f"{GAVE_UP} {row.get('note', '')}"
            continue
        _append_draft(cand, row, problems)
    return problems


GAVE_UP = "gave up:"  # how a give-up is noted on the candidate (its writer_note)


def gave_up(cand: ReferenceCandidate) -> bool:
    """Did a reviser find no honest revision for the candidate (it gets no further worksheet)?"""
    return GAVE_UP in (cand.writer_note or "")


def _append_draft(cand: ReferenceCandidate, row: dict[str, Any], problems: list[str]) -> None:
    """The writer's draft in ``row`` (passages as labels P1..Pn) after the candidate's drafts,
    or a problem naming the candidate when the row does not fit its subgraph."""
    from factory.compose.passages import labels_for

    labels = labels_for(cand.subgraph)
    try:
        steps = [ReasoningStep(chunk_id=labels[s["passage"]], quote=s["quote"], finding=s.get("finding", ""))
                 for s in row["steps"]]
        cand.drafts.append(ReferenceDraft(question=row["question"], answer=row["answer"],
                                          answer_aliases=row.get("answer_aliases", []),
                                          answer_chunk_id=labels[row["answer_passage"]], steps=steps,
                                          note=row.get("note", "")))
    except (KeyError, ValidationError) as exc:
        problems.append(f"index {cand.index}: {type(exc).__name__}: {exc}")
