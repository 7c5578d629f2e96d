"""One candidate's own work, from the cell it was given to a passed draft or a recorded rejection.

A candidate never settles anything: it does not draw its cell, check duplicates or
write a task. It drafts (``drafting``), judges the draft (``judge``) and comes back
``passed`` with its ``Task`` or ``rejected`` with the reason; the driver settles it.
Every step is written to the store (``candidates``, ``drafts``, ``verdicts``) and flushed
at the candidate's checkpoints (its start, its rejection, before it is handed to the
driver) or by the writer's clock, after the LLM calls they came from, so another process
can read rejects while a run goes on.

Resume is by database keys: candidate ``i`` of a run always has the same id; one that
finished is not done again, one that was cut short starts over with the cell it had
drawn, and the gateway's cache answers every LLM call it had recorded (the gateway groups
its call rows, ``llm.record_every_s``: a kill loses those not yet written, which are asked
again).
"""

from __future__ import annotations

import time
from typing import Any

from factory.compose.passages import entity_name
from factory.generate.context import CandidateContext, ContextSpec, context_for
from factory.generate.drafting import Drafted, draft_for_cell, selection_rng
from factory.generate.judge import Judgement, judge
from factory.generate.metering import Metered
from factory.generate.outcome import CandidateOutcome
from factory.generate.scheduler import Job
from factory.records import Cell, Draft, Subgraph, Task, Verdict
from factory.store.refused import refusal_row
from factory.validate.gauntlet import GauntletResult


class CandidateBook:
    """The bookkeeping of one candidate: counts, and rows written and flushed as it goes."""

    def __init__(self, ctx: CandidateContext, job: Job) -> None:
        self.ctx = ctx
        self.index = job.index
        self.id = ctx.candidate_id(job.index)
        self.cell = Cell.parse(job.cell)
        self.started = time.perf_counter()
        self.llm = Metered(ctx.llm)
        self.drafted: Drafted | None = None
        self.attempts = self.revisions = self.prunes = self.reselections = 0
        self.final_draft: Draft | None = None

    def _write(self, table: str, row: Any, *, flush: bool = True) -> None:
        self.ctx.writer.append(table, [row])
        if flush:
            self.checkpoint()

    def checkpoint(self) -> None:
        """The candidate's rows so far, after the LLM calls they came from (the gateway groups
        its call rows: a draft or verdict in the store always has its calls there too)."""
        self.ctx.flush_calls()
        self.ctx.writer.flush()

    def outcome(self, status: str, stage: str, **fields: Any) -> CandidateOutcome:
        subgraph = self.drafted.subgraph if self.drafted else None
        return CandidateOutcome(
            candidate_id=self.id, run_id=self.ctx.run_id, index=self.index, seed=self.ctx.seed, lang=self.ctx.lang,
            status=status, cell=self.cell.key, stage=stage, attempts=self.attempts, revisions=self.revisions,
            prunes=self.prunes, tokens=self.llm.tokens, cached_calls=self.llm.cached,
            elapsed_s=time.perf_counter() - self.started,
            final_draft_id=self.final_draft.draft_id if self.final_draft else None,
            subgraph=subgraph.model_dump(mode="json") if subgraph else None, **fields,
        )

    def start(self) -> None:
        self._write("candidates", self.outcome("started", "started").row())

    def record_draft(self, draft: Draft, origin: str, parent: Draft | None) -> None:
        self.attempts += 1
        self.final_draft = draft
        row = draft.model_dump(mode="json", exclude={"cell"})
        row.update(run_id=self.ctx.run_id, origin=origin, parent_draft_id=parent.draft_id if parent else None,
                   cell=draft.cell.key)
        # drafts and verdicts are flushed with the candidate's next row ('rejected', or before it
        # is handed to the driver) or by the writer's clock, not one segment per step: a killed
        # candidate runs again from its start, and the LLM calls it made are served from the store
        self._write("drafts", row, flush=False)

    def record_verdict(self, draft: Draft, step: int, verdict: Verdict) -> None:
        row = verdict.model_dump(mode="json")
        row.update(draft_id=draft.draft_id, candidate_id=self.id, run_id=self.ctx.run_id, attempt=draft.attempt,
                   step=step)
        self._write("verdicts", row, flush=False)

    def record_refused(self, subgraph: Subgraph, draft: Draft, verdict: Verdict) -> None:
        key = subgraph.answer_entity or ""
        self._write("refused_answers", refusal_row(
            self.ctx.lang, key, reason=verdict.reason, name=entity_name(subgraph, key), cell=subgraph.cell.key,
            note=verdict.feedback, candidate_id=self.id, draft_id=draft.draft_id, run_id=self.ctx.run_id), flush=False)

    def reject(self, stage: str, *, validator: str | None = None, reason: str = "", feedback: str = "") -> CandidateOutcome:
        outcome = self.outcome("rejected", stage, validator=validator, reason=reason, feedback=feedback)
        self._write("candidates", outcome.row())
        return outcome

    def passed(self, judgement: Judgement) -> CandidateOutcome:
        """Through the gauntlet: the task and the final row, not written (the driver settles them)."""
        draft, result = judgement.last.draft, judgement.last.result
        self.checkpoint()  # its drafts and verdicts, before the driver writes the task
        task = Task.from_draft(draft, run_id=self.ctx.run_id, revisions=self.revisions,
                               validators=result.passed_names, skipped_validators=result.skipped_names,
                               difficulty=difficulty_figures(result) | {"prunes": self.prunes})
        return self.outcome("passed", "accepted", task_id=self.id, task=task)


def difficulty_figures(result: GauntletResult) -> dict[str, Any]:
    out: dict[str, Any] = {"skipped": result.skipped_names}
    for v in result.verdicts:
        if v.validator == "shortcut" and v.ok:
            out["shortcut"] = v.figures.get("searchers", {})
        elif v.validator == "closed_book" and v.ok:
            out["closed_book_hits"] = v.figures.get("hits")
        elif v.validator == "solvability" and v.ok:
            out["solvability"] = {"solved": v.figures.get("solved"), "samples": v.figures.get("samples")}
        elif v.validator == "agent_run" and v.ok:
            out["agent"] = {k: v.figures.get(k) for k in ("recall", "trajectory_recall", "searches", "rounds",
                                                          "first_round_recall", "easy_rollouts", "rollouts")}
    return out


def run_candidate(job: Job, ctx: CandidateContext) -> CandidateOutcome:
    """Candidate ``job.index`` from its cell to a passed draft or a recorded rejection; never raises for bad data."""
    earlier = ctx.finished.get(ctx.candidate_id(job.index))
    if earlier is not None:
        return CandidateOutcome.from_row(earlier)
    book = CandidateBook(ctx, job)
    try:
        return _run(book, job)
    except Exception as exc:  # a bug must cost one candidate, recorded, not the run
        return book.reject("error", reason="exception", feedback=f"{type(exc).__name__}: {exc}")


def _vocabulary(ctx: CandidateContext) -> Any:
    """The fixed BM25 index the broad-query check searches (its document frequencies), if any."""
    bm25 = ctx.validation.searchers.get("bm25")
    return bm25 if hasattr(bm25, "doc_freq") else None


def _run(book: CandidateBook, job: Job) -> CandidateOutcome:
    ctx = book.ctx
    book.start()
    drafted = book.drafted = draft_for_cell(
        ctx.selection, ctx.store, ctx.taxonomy, book.cell, book.llm, ctx.settings, lang=ctx.lang,
        candidate_id=book.id, rng=selection_rng(ctx.seed, job.index), avoid=ctx.avoid(job),
        chunks=ctx.validation.chunks, vocabulary=_vocabulary(ctx))
    if drafted.stopped == "select":
        # recorded as such: the driver marks the cell unsupported, now and when a run resumes
        return book.reject("select", reason="unsupported_cell" if drafted.structural else "no_subgraph",
                           feedback=drafted.reason)
    if drafted.stopped == "facts":
        return book.reject("facts", reason="fact_sheet_failed", feedback=drafted.reason)
    assert drafted.draft is not None
    book.record_draft(drafted.draft, "compose", None)
    validation = ctx.validation.for_item(book.id, drafted.subgraph)
    validation.llm = book.llm
    validation.duplicate_of = ctx.duplicates(job)
    def redraft(avoid: set[frozenset[str]], known: set[str]) -> Drafted:
        again = draft_for_cell(ctx.selection, ctx.store, ctx.taxonomy, book.cell, book.llm, ctx.settings,
                               lang=ctx.lang, candidate_id=book.id, attempt=book.attempts,
                               rng=selection_rng(ctx.seed, job.index, book.reselections + 1),
                               avoid=ctx.avoid(job) | avoid,
                               avoid_answers=known, declined=avoid,
                               chunks=ctx.validation.chunks, vocabulary=_vocabulary(ctx))
        if again.draft is not None:
            book.drafted = again
        return again

    judgement = judge(drafted, validation=validation, validators=ctx.validators, settings=ctx.settings,
                      llm=book.llm, lang=ctx.lang, log=book, redraft=redraft)
    if judgement.passed:
        return book.passed(judgement)
    failure = judgement.failure
    assert failure is not None
    return book.reject("gauntlet", validator=failure.validator, reason=failure.reason, feedback=failure.feedback)


def run_job(job: Job, spec: ContextSpec) -> CandidateOutcome:
    """Run one candidate in this process (the context built on first use); for a flow's workers."""
    return run_candidate(job, context_for(spec))
