"""The generation loop: draw a cell, select a subgraph, compose, run the gauntlet, prune,
revise, and accept or reject. Nothing here is relaxed for a weak model.

``generate_candidate(i, ctx)`` does one candidate and is what the Prefect flow maps;
``run_generation`` keeps ``concurrency`` of them in flight without Prefect. Every
step is written to the store and flushed at once (``candidates``, ``drafts``,
``verdicts``, ``tasks``), so another process can read rejects while a run goes on.

Resume is by database keys: candidate ``i`` of a run always has the same id; one that
finished (accepted or rejected) is not done again, one that was cut short starts over
with the cell it had drawn, and the gateway's cache answers every LLM call it had
already made. A task's id is its candidate's id, so a rerun never doubles a task.

Runs spread over processes (``factory/ordered.py``) split a candidate in two: a worker
runs it with the cell a driver drew (``cell=``, ``avoid=``, ``defer=True``) and returns
one that passed the gauntlet as ``status="passed"`` with its rows pending; the driver
settles it with ``settle_passed`` (accepted, or rejected as a duplicate).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable

from factory.records import Cell, Draft, Subgraph, Verdict
from factory.settings import Settings
from factory.validate.base import StoreChunks, ValidationContext, store_entity_names
from factory.validate.duplicates import TaskDeduper
from factory.validate.gauntlet import GauntletResult, build_validators, run_gauntlet

class Metered:
    """Counts the tokens one candidate spends (cache hits cost nothing); passes stage and
    item ids on to a gateway, and nothing extra to a bare backend."""

    def __init__(self, llm: Any) -> None:
        self.inner = llm
        self.tokens = 0
        self.cached = 0  # answers served from the gateway's cache
        self._lock = threading.Lock()
        self._tagged = hasattr(llm, "complete_many")  # the gateway (or a bound view of it)

    name = property(lambda self: self.inner.name)
    model = property(lambda self: self.inner.model)
    context_tokens = property(lambda self: self.inner.context_tokens)

    def _count(self, responses: list[Any]) -> None:
        with self._lock:
            self.tokens += sum(r.tokens_in + r.tokens_out for r in responses if not r.cached)
            self.cached += sum(1 for r in responses if r.cached)

    def complete(self, request: Any, *, stage: str | None = None, item_id: str = "") -> Any:
        if self._tagged and not hasattr(self.inner, "stage"):
            response = self.inner.complete(request, stage=stage, item_id=item_id)
        else:
            response = self.inner.complete(request)
        self._count([response])
        return response

    def complete_many(self, requests: list[Any], *, stage: str | None = None, item_ids: Any = None,
                      concurrency: int | None = None) -> list[Any]:
        if self._tagged and not hasattr(self.inner, "stage"):
            responses = self.inner.complete_many(requests, stage=stage, item_ids=item_ids, concurrency=concurrency)
        elif self._tagged:
            responses = self.inner.complete_many(requests, concurrency=concurrency)
        else:
            responses = [self.inner.complete(r) for r in requests]
        self._count(list(responses))
        return list(responses)


# verdict reasons that a rewrite cannot fix: reject at once instead of spending a revision
UNREVISABLE = {"llm_error", "validator_error", "agent_error", "parse_error"}


@dataclass
class CandidateOutcome:
    candidate_id: str
    index: int
    status: str  # accepted | rejected
    cell: str | None = None
    stage: str = ""  # cell | select | facts | gauntlet | dedup | error | accepted
    validator: str | None = None
    reason: str = ""
    feedback: str = ""
    attempts: int = 0
    revisions: int = 0
    prunes: int = 0
    task_id: str | None = None
    tokens: int = 0
    elapsed_s: float = 0.0
    resumed: bool = False
    cached_calls: int = 0
    final_draft_id: str | None = None
    pending: dict[str, Any] | None = None  # status "passed": the task and candidate rows to settle


@dataclass
class GenerationSummary:
    run_id: str
    n: int
    earlier_accepted: int = 0  # accepted by earlier runs of this run id (resume)
    candidates: int = 0
    accepted: int = 0
    rejected: int = 0
    resumed: int = 0
    revisions: int = 0
    prunes: int = 0
    tokens: int = 0
    elapsed_s: float = 0.0
    stopped_by: str = ""
    rejected_by: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: CandidateOutcome) -> None:
        self.candidates += 1
        self.resumed += outcome.resumed
        self.revisions += outcome.revisions
        self.prunes += outcome.prunes
        self.tokens += outcome.tokens
        if outcome.status == "accepted":
            self.accepted += 1
        else:
            self.rejected += 1
            key = outcome.validator or outcome.stage
            self.rejected_by[key] = self.rejected_by.get(key, 0) + 1

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.candidates if self.candidates else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "acceptance_rate": round(self.acceptance_rate, 4)}


@dataclass
class GenerationContext:
    """Everything a candidate needs; shared by all candidates of a run (thread-safe)."""

    store: Any
    index: Any
    llm: Any
    settings: Settings
    lang: str
    run_id: str
    seed: int
    taxonomy: Any
    sampler: Any
    selection: Any  # the loaded SelectionIndex (or the store)
    validation: ValidationContext
    validators: list
    deduper: TaskDeduper
    writer: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def candidate_id(self, index: int) -> str:
        return f"{self.run_id}-s{self.seed}-{index:05d}"


def make_context(store: Any, index: Any, llm: Any, settings: Settings, *, lang: str, run_id: str, seed: int,
                 difficulty: Any = None, taxonomy: Any = None) -> GenerationContext:
    from factory.graph.select import SelectionIndex
    from factory.taxonomy import CellSampler, load_taxonomy

    taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
    accepted_rows = store.query("SELECT task_id, cell, question, support_chunk_ids FROM tasks WHERE run_id = ?", [run_id])
    # a candidate cut short ('started') keeps the cell it drew and does not draw again when it
    # resumes, so it counts as drawn now: the draws that follow are those of an uninterrupted run
    drawn_rows = store.query(
        "SELECT cell, count(*) AS n FROM candidates WHERE run_id = ? AND cell IS NOT NULL GROUP BY cell", [run_id])
    # counted by finished candidates: a task row flushed just before a kill belongs to a candidate
    # that resumes and counts itself when it is accepted again
    accepted = {r["cell"]: r["n"] for r in store.query(
        "SELECT cell, count(*) AS n FROM candidates WHERE run_id = ? AND status = 'accepted' GROUP BY cell", [run_id])}
    sampler = CellSampler(taxonomy, seed, lang, accepted, drawn={r["cell"]: r["n"] for r in drawn_rows})
    for row in store.query("SELECT DISTINCT cell, feedback FROM candidates WHERE run_id = ? AND stage = 'select' "
                           "AND reason = 'unsupported_cell' ORDER BY cell", [run_id]):
        sampler.mark_unsupported(Cell.parse(row["cell"]), row["feedback"] or "")  # as the earlier process had
    deduper = TaskDeduper(settings.generate.dedup_jaccard, settings.generate.dedup_perm)
    for row in accepted_rows:
        deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], lang)
    chunks = StoreChunks(store)
    searchers = {}
    if index is not None:
        kinds = ["bm25"] + (["dense", "hybrid"] if getattr(index, "has_dense", False) else [])
        searchers = {kind: index.searcher(kind) for kind in kinds if kind in settings.validation.shortcut_searchers}
    if difficulty is None and settings.validation.agent_run and index is not None:
        from factory.agent.difficulty import DifficultyChecker

        difficulty = DifficultyChecker(index, llm, settings, store)
    validation = ValidationContext(settings=settings.validation, chunks=chunks, searchers=searchers, llm=llm,
                                   entity_names=store_entity_names(store), difficulty=difficulty)
    validation.get_lexicon()  # built once from the corpus, before candidates run in parallel
    ctx = GenerationContext(
        store=store, index=index, llm=llm, settings=settings, lang=lang, run_id=run_id, seed=seed,
        taxonomy=taxonomy, sampler=sampler, selection=SelectionIndex.load(store, lang), validation=validation,
        validators=build_validators(settings.validation.order), deduper=deduper,
        writer=store.writer(f"generate-{run_id}"),
    )
    store.append("runs", [{"run_id": run_id, "command": "generate", "settings": json.loads(settings.dump()),
                           "started_at": datetime.now(timezone.utc).replace(tzinfo=None),
                           "host": socket.gethostname(), "version": "generate"}], name="runs")
    return ctx


# ------------------------------------------------------------------ one candidate
class _Candidate:
    """The bookkeeping of one candidate: rows written and flushed as it goes."""

    def __init__(self, ctx: GenerationContext, index: int) -> None:
        self.ctx = ctx
        self.index = index
        self.id = ctx.candidate_id(index)
        self.started = time.perf_counter()
        self.llm = Metered(ctx.llm)
        self.cell: Cell | None = None
        self.subgraph: Subgraph | None = None
        self.attempts = self.revisions = self.prunes = 0
        self.final_draft: Draft | None = None

    def write(self, table: str, row: dict[str, Any]) -> None:
        self.ctx.writer.append(table, [row])
        self.ctx.writer.flush()

    def candidate_row(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "candidate_id": self.id, "run_id": self.ctx.run_id, "idx": self.index, "seed": self.ctx.seed,
            "lang": self.ctx.lang, "cell": self.cell.key if self.cell else None, "status": status,
            "attempts": self.attempts, "revisions": self.revisions, "prunes": self.prunes,
            "tokens": self.llm.tokens, "elapsed_s": time.perf_counter() - self.started,
            "final_draft_id": self.final_draft.draft_id if self.final_draft else None,
            "subgraph": self.subgraph.model_dump(mode="json") if self.subgraph else None, **extra,
        }

    def record_draft(self, draft: Draft, origin: str, parent: Draft | None) -> None:
        self.attempts += 1
        self.final_draft = draft
        row = draft.model_dump(mode="json", exclude={"cell"})
        row.update(run_id=self.ctx.run_id, origin=origin, parent_draft_id=parent.draft_id if parent else None,
                   cell=draft.cell.key)
        self.write("drafts", row)

    def record_verdict(self, draft: Draft, step: int, verdict: Verdict) -> None:
        row = verdict.model_dump(mode="json")
        row.update(draft_id=draft.draft_id, candidate_id=self.id, run_id=self.ctx.run_id, attempt=draft.attempt,
                   step=step)
        self.write("verdicts", row)

    def finish(self, status: str, stage: str, *, validator: str | None = None, reason: str = "",
               feedback: str = "", task_id: str | None = None) -> CandidateOutcome:
        self.write("candidates", self.candidate_row(status, stage=stage, validator=validator, reason=reason,
                                                    feedback=feedback, task_id=task_id))
        return CandidateOutcome(
            candidate_id=self.id, index=self.index, status=status, cell=self.cell.key if self.cell else None,
            stage=stage, validator=validator, reason=reason, feedback=feedback, attempts=self.attempts,
            revisions=self.revisions, prunes=self.prunes, task_id=task_id, tokens=self.llm.tokens,
            cached_calls=self.llm.cached, elapsed_s=time.perf_counter() - self.started,
            final_draft_id=self.final_draft.draft_id if self.final_draft else None,
        )


def _finished(ctx: GenerationContext, candidate_id: str) -> dict[str, Any] | None:
    rows = ctx.store.query("SELECT * FROM candidates WHERE candidate_id = ?", [candidate_id])
    return rows[0] if rows else None


def _outcome_from_row(row: dict[str, Any]) -> CandidateOutcome:
    return CandidateOutcome(
        candidate_id=row["candidate_id"], index=row["idx"], status=row["status"], cell=row["cell"],
        stage=row["stage"] or "", validator=row["validator"], reason=row["reason"] or "",
        feedback=row["feedback"] or "", attempts=row["attempts"] or 0, revisions=row["revisions"] or 0,
        prunes=row["prunes"] or 0, task_id=row["task_id"], tokens=0, elapsed_s=0.0, resumed=True,
        final_draft_id=row["final_draft_id"],
    )


def generate_candidate(candidate_index: int, ctx: GenerationContext, *, cell: Cell | None = None,
                       avoid: Any = (), defer: bool = False) -> CandidateOutcome:
    """One candidate from cell to accepted task or recorded rejection; never raises for bad data.

    ``cell``: drawn by a driver (default: from ``ctx.sampler``); ``avoid``: more support
    sets not to select again; ``defer``: a candidate that passes the gauntlet comes back
    as ``status="passed"`` with its rows in ``pending``, for ``settle_passed``.
    """
    earlier = _finished(ctx, ctx.candidate_id(candidate_index))
    if earlier and earlier["status"] in {"accepted", "rejected"}:
        return _outcome_from_row(earlier)
    cand = _Candidate(ctx, candidate_index)
    try:
        return _run_candidate(cand, earlier, cell=cell, avoid=avoid, defer=defer)
    except Exception as exc:  # a bug must cost one candidate, recorded, not the run
        return cand.finish("rejected", "error", reason="exception", feedback=f"{type(exc).__name__}: {exc}")


def _run_candidate(cand: _Candidate, earlier: dict[str, Any] | None, *, cell: Cell | None = None,
                   avoid: Any = (), defer: bool = False) -> CandidateOutcome:
    from factory.compose.common import ComposeError
    from factory.compose.composer import compose
    from factory.compose.facts import build_fact_sheet, load_chunk_texts
    from factory.compose.run import selector_params
    from factory.graph.select import NoSubgraph, select_subgraph
    from factory.taxonomy import NoCellsLeft, candidate_rng

    ctx, s = cand.ctx, cand.ctx.settings
    try:
        # a candidate cut short keeps the cell it drew, so the rerun asks the same questions
        if earlier and earlier.get("cell"):
            cand.cell = Cell.parse(earlier["cell"])
        else:
            cand.cell = cell or ctx.sampler.draw(cand.index)
    except NoCellsLeft as exc:
        return cand.finish("rejected", "cell", reason="no_cells_left", feedback=str(exc))
    cand.write("candidates", cand.candidate_row("started", stage="started"))
    try:
        rng = candidate_rng(ctx.seed, cand.index, "select")
        avoid_sets = ctx.deduper.supports() | {frozenset(chunks) for chunks in avoid}
        cand.subgraph = select_subgraph(ctx.selection, cand.cell, ctx.lang, rng, taxonomy=ctx.taxonomy,
                                        avoid_chunk_sets=avoid_sets, params=selector_params(s))
    except NoSubgraph as exc:
        if exc.structural:  # recorded as such, so a resumed run skips the cell too (make_context)
            ctx.sampler.mark_unsupported(cand.cell, exc.reason)
        return cand.finish("rejected", "select", reason="unsupported_cell" if exc.structural else "no_subgraph",
                           feedback=exc.reason)
    spec = ctx.taxonomy.spec(cand.cell, ctx.lang)
    texts = load_chunk_texts(ctx.store, cand.subgraph.chunk_ids)
    try:
        sheet = build_fact_sheet(cand.subgraph, texts, cand.llm, ctx.lang, cand.id,
                                 temperature=s.compose.facts_temperature, max_tokens=s.compose.max_tokens)
    except ComposeError as exc:
        return cand.finish("rejected", "facts", reason="fact_sheet_failed", feedback=exc.reason)
    draft = compose(sheet, spec, cand.llm, ctx.lang, cand.id, temperature=s.compose.compose_temperature,
                    max_tokens=s.compose.max_tokens)
    cand.record_draft(draft, "compose", None)
    vctx = ctx.validation.for_item(cand.id, cand.subgraph)
    vctx.llm = cand.llm
    history: list[tuple[Draft, list[Verdict]]] = []  # every draft judged so far, for the reviser
    while True:
        result = run_gauntlet(draft, vctx, ctx.validators,
                              on_verdict=lambda step, v, d=draft: cand.record_verdict(d, step, v))
        history.append((draft, result.verdicts))
        if result.passed:
            passed = _passed(cand, draft, result)
            return passed if defer else settle_passed(ctx, passed)
        failure = result.failure
        assert failure is not None
        decorative = [c for c in failure.figures.get("decorative", []) if c != draft.answer_chunk_id]
        if not failure.hard and decorative and cand.prunes < s.generate.max_prunes:
            pruned = draft.model_copy(update={
                "support_chunk_ids": [c for c in draft.support_chunk_ids if c != decorative[0]],
                "attempt": draft.attempt + 1, "draft_id": f"{cand.id}-a{draft.attempt + 1}",
            })
            cand.prunes += 1
            cand.record_draft(pruned, "prune", draft)
            draft = pruned
            continue
        reason = "parse_error" if draft.parse_error else failure.reason
        # pruned below a multi-hop cell's minimum: a rewrite cannot bring the chunks back
        pruned_away = failure.reason == "not_multi_hop" and cand.prunes > 0
        if reason in UNREVISABLE or pruned_away or cand.revisions >= s.generate.max_revisions:
            return cand.finish("rejected", "gauntlet", validator=failure.validator, reason=failure.reason,
                               feedback=failure.feedback)
        revised = _revise(history, sheet, spec, cand)
        cand.revisions += 1
        cand.record_draft(revised, "revise", draft)
        draft = revised


def _revise(history: list[tuple[Draft, list[Verdict]]], sheet: Any, spec: Any, cand: _Candidate) -> Draft:
    from factory.compose.composer import revise

    s = cand.ctx.settings
    return revise(history, sheet, spec, cand.llm, cand.ctx.lang,
                  temperature=s.compose.compose_temperature, max_tokens=s.compose.max_tokens)


def _difficulty(result: GauntletResult) -> dict[str, Any]:
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


def _passed(cand: _Candidate, draft: Draft, result: GauntletResult) -> CandidateOutcome:
    """A candidate through the gauntlet, with its task and candidate rows (not written yet)."""
    ctx = cand.ctx
    cell = draft.cell
    task = {
        "task_id": cand.id, "run_id": ctx.run_id, "candidate_id": cand.id, "draft_id": draft.draft_id,
        "lang": draft.lang, "cell": cell.key, "mechanic": cell.mechanic, "form": cell.form,
        "answer_type": cell.answer_type, "question": draft.question, "answer": draft.answer,
        "answer_aliases": draft.answer_aliases, "support_chunk_ids": draft.support_chunk_ids,
        "answer_chunk_id": draft.answer_chunk_id, "bridge_entities": draft.bridge_entities,
        "revisions": cand.revisions, "validators": result.passed_names,
        "skipped_validators": result.skipped_names, "difficulty": _difficulty(result) | {"prunes": cand.prunes},
    }
    return CandidateOutcome(
        candidate_id=cand.id, index=cand.index, status="passed", cell=cell.key, stage="accepted",
        attempts=cand.attempts, revisions=cand.revisions, prunes=cand.prunes, task_id=cand.id,
        tokens=cand.llm.tokens, cached_calls=cand.llm.cached, elapsed_s=time.perf_counter() - cand.started,
        final_draft_id=draft.draft_id,
        pending={"task": task, "candidate": cand.candidate_row("accepted", stage="accepted", validator=None,
                                                               reason="", feedback="", task_id=cand.id)},
    )


def settle_passed(ctx: Any, outcome: CandidateOutcome) -> CandidateOutcome:
    """Accept a candidate that passed the gauntlet unless it duplicates a task accepted before.

    ``ctx`` needs ``deduper``, ``sampler`` and ``writer``: a run's context, or a driver.
    """
    assert outcome.status == "passed" and outcome.pending is not None
    task, row = outcome.pending["task"], dict(outcome.pending["candidate"])
    duplicate = ctx.deduper.check_and_add(outcome.candidate_id, task["question"], task["support_chunk_ids"],
                                          task["lang"])
    if duplicate is not None:
        feedback = f"{duplicate.kind.replace('_', ' ')} of accepted task {duplicate.of} (jaccard {duplicate.jaccard})"
        row.update(status="rejected", stage="dedup", validator="dedup", reason=duplicate.kind, feedback=feedback,
                   task_id=None)
        ctx.writer.append("candidates", [row])
        ctx.writer.flush()
        return replace(outcome, status="rejected", stage="dedup", validator="dedup", reason=duplicate.kind,
                       feedback=feedback, task_id=None, pending=None)
    ctx.writer.append("tasks", [task])
    ctx.writer.flush("tasks")  # before the candidate's 'accepted' row: a kill between them must not lose the task
    ctx.writer.append("candidates", [row])
    ctx.writer.flush()
    ctx.sampler.record_accepted(Cell.parse(task["cell"]))
    return replace(outcome, status="accepted", pending=None)


# ------------------------------------------------------------------ the run
def run_generation(
    store: Any,
    index: Any,
    llm: Any,
    settings: Settings,
    *,
    n: int,
    lang: str,
    run_id: str,
    seed: int,
    max_attempts: int | None = None,
    token_budget: int | None = None,
    concurrency: int = 1,
    progress: Callable[[CandidateOutcome, GenerationSummary], None] | None = None,
    difficulty: Any = None,
    taxonomy: Any = None,
) -> GenerationSummary:
    """Candidates until ``n`` are accepted, ``max_attempts`` candidates were tried (earlier
    runs of the same run id included) or ``token_budget`` tokens were spent."""
    started = time.perf_counter()
    ctx = make_context(store, index, llm, settings, lang=lang, run_id=run_id, seed=seed, difficulty=difficulty,
                       taxonomy=taxonomy)
    max_attempts = max_attempts or n * settings.generate.attempts_per_task
    summary = GenerationSummary(run_id=run_id, n=n)
    summary.earlier_accepted = int(store.scalar(  # by candidates, as in make_context
        "SELECT count(*) FROM candidates WHERE run_id = ? AND status = 'accepted'", [run_id]) or 0)
    done = {r["idx"] for r in store.query(
        "SELECT idx FROM candidates WHERE run_id = ? AND status IN ('accepted', 'rejected')", [run_id])}
    spent = int(store.scalar("SELECT coalesce(sum(tokens), 0) FROM candidates WHERE run_id = ? "
                             "AND status <> 'started'", [run_id]) or 0)
    used = len(done)
    next_index = 0

    def stop_reason() -> str:
        if summary.earlier_accepted + summary.accepted >= n:
            return "target"
        if used >= max_attempts:
            return "max_attempts"
        if token_budget is not None and spent + summary.tokens >= token_budget:
            return "token_budget"
        return ""

    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="candidate") as pool:
            inflight: set = set()
            while True:
                while len(inflight) < max(1, concurrency) and not stop_reason():
                    while next_index in done:
                        next_index += 1
                    inflight.add(pool.submit(generate_candidate, next_index, ctx))
                    next_index += 1
                    used += 1
                if not inflight:
                    break
                finished, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    summary.add(outcome)
                    if progress is not None:
                        progress(outcome, summary)
    finally:
        ctx.writer.close()
    summary.stopped_by = stop_reason() or "done"
    summary.elapsed_s = time.perf_counter() - started
    return summary
