"""Candidates run anywhere, drawn and settled in candidate order: the same tasks whatever the runner.

A run's candidates may execute on a thread pool, on Dask workers in other processes or
on other machines. Two things stay with the driver (``factory.generate.settle``):
drawing each candidate's cell (the sampler corrects coverage by what was accepted so
far) and settling a candidate that passed the gauntlet (accepted, or rejected as a
duplicate of a task accepted before it). Workers only compute.

Determinism comes from doing both in candidate order, with one rule: candidate ``i``
is drawn once candidates ``0 .. i - lookahead`` are settled, and what its draw sees
of the run is exactly those outcomes. So its cell and the support sets it must avoid
never depend on which worker finished first, nor on whether the run was cut short
and resumed in between: with a deterministic model the same seed gives the same
tasks on one thread, a thread pool or a Dask cluster, in one go or after a kill, and
at any concurrency: the tasks depend on the lookahead, never on how many candidates
run at once. The lookahead bounds how far execution may run ahead of settling, so it
caps the candidates in flight (a concurrency above it adds nothing): a slow candidate
holds back the draws behind it, not those handed out.

Stop rules, one set for every entry point: the attempt budget is exact (candidates
beyond it are never drawn). When the target or the token budget is reached, or no
cell is left to draw, drawn candidates not yet started are dropped and those in
flight are finished and settled (their number depends on timing; the tasks settled
up to the stop do not). Spent tokens are the candidates' own (``candidates.tokens``).

Pacing a target: a lookahead sized to fill a server (hundreds) would otherwise put
hundreds of candidates in flight for a target of 30 and settle them all after the
stop. With a target, the candidates drawn and not yet settled are capped near
``target_margin`` times what the target still needs at the acceptance rate seen so
far (``(accepted + 1) / (settled + 2)``: half before anything settled, falling towards
zero on a run that accepts nothing, when the lookahead alone caps them). The cap only
delays draws, and a draw sees the run up to ``index - lookahead`` whenever it happens,
so it changes how many candidates run past the stop, never which tasks the seed gives.
"""

from __future__ import annotations

import math
import queue
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from factory.capacity import SERIAL, resolve_concurrency
from factory.generate.outcome import CandidateOutcome
from factory.taxonomy import NoCellsLeft


@dataclass(frozen=True)
class Job:
    """What a worker needs to run candidate ``index`` (small and picklable)."""

    index: int
    cell: str
    settled_upto: int = -1  # candidates up to this index were settled when it was drawn
    avoid: tuple[tuple[str, ...], ...] = ()  # support sets this try accepted up to ``settled_upto``
    questions: tuple[tuple[str, str, str], ...] = ()  # those tasks' (task id, question, answer), in the same order


@dataclass(frozen=True)
class RunLimits:
    """What bounds a run (target, attempt and token budgets) and how it is scheduled
    (candidates in flight, candidates drawn ahead of the oldest unsettled one)."""

    n: int | None = None  # accepted tasks wanted in this run (None: no target)
    max_attempts: int = 10  # candidates of this run, earlier tries of it included
    token_budget: int | None = None
    concurrency: int = 1  # candidates in flight wanted; the lookahead caps them
    lookahead: int = SERIAL["lookahead"]  # what the tasks depend on (not the concurrency)
    target_margin: float = 0.0  # with a target, pace the draws to about this x what it still needs (0: off)

    @property
    def window(self) -> int:
        return max(1, self.lookahead)

    @property
    def in_flight(self) -> int:
        """Candidates that run at once: the concurrency, capped by the lookahead."""
        return max(1, min(self.concurrency, self.window))

    @classmethod
    def from_settings(cls, settings: Any, *, n: int | None, max_attempts: int | None = None,
                      token_budget: int | None = None, concurrency: int | None = None) -> "RunLimits":
        """Concurrency (``concurrency`` beats ``generate.concurrency``) and lookahead as
        ``factory.capacity`` resolves them; attempts default to ``n x generate.attempts_per_task``."""
        g = settings.generate
        if max_attempts is None:
            if n is None:
                raise ValueError("a run needs a target or an attempt budget")
            max_attempts = n * g.attempts_per_task
        resolved = resolve_concurrency(settings.llm, g, candidates=concurrency)
        return cls(n=n, max_attempts=max_attempts, token_budget=token_budget, concurrency=resolved.candidates,
                   lookahead=resolved.lookahead, target_margin=g.target_margin)

    def paced(self, accepted: int, settled: int) -> int | None:
        """With a target and a margin: how many drawn candidates may wait to be settled, given
        what the run accepted of what it settled (earlier tries included); None: no cap."""
        if self.n is None or self.target_margin <= 0:
            return None
        rate = (accepted + 1) / (settled + 2)
        return max(1, math.ceil(self.target_margin * max(0, self.n - accepted) / rate))


@dataclass
class RunState:
    """Where a run stands before this try: finished candidates, accepted tasks, tokens."""

    done: set[int] = field(default_factory=set)
    accepted: int = 0
    tokens: int = 0

    @classmethod
    def read(cls, store: Any, run_id: str) -> "RunState":
        # by candidates: a task row that landed just before a kill belongs to a candidate that
        # runs again and counts itself when it is settled
        rows = store.query("SELECT idx, status, tokens FROM candidates WHERE run_id = ? "
                           "AND status IN ('accepted', 'rejected') AND idx IS NOT NULL", [run_id])
        return cls(done={int(r["idx"]) for r in rows}, accepted=sum(r["status"] == "accepted" for r in rows),
                   tokens=sum(int(r["tokens"] or 0) for r in rows))


@dataclass
class RunReport:
    """What a try of a run did; ``earlier_*``: what earlier tries of the same run id had done."""

    run_id: str = ""
    n: int | None = None
    earlier_accepted: int = 0
    earlier_tokens: int = 0
    resumed_done: int = 0  # candidates earlier tries finished (not run again)
    started: int = 0
    candidates: int = 0  # settled now: accepted + rejected
    accepted: int = 0
    rejected: int = 0
    failed: int = 0  # raised out of the candidate (a lost worker): settled as nothing, a rerun tries again
    revisions: int = 0
    prunes: int = 0
    tokens: int = 0
    cached_calls: int = 0  # LLM answers the candidates got from the cache (a resumed run re-asks)
    elapsed_s: float = 0.0
    stopped_by: str = ""
    rejected_by: dict[str, int] = field(default_factory=dict)
    settled: list[int] = field(default_factory=list)  # candidate indices in the order they were settled
    errors: list[str] = field(default_factory=list)

    @property
    def accepted_total(self) -> int:
        return self.earlier_accepted + self.accepted

    @property
    def tokens_total(self) -> int:
        return self.earlier_tokens + self.tokens

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.candidates if self.candidates else 0.0

    def add(self, outcome: CandidateOutcome) -> None:
        self.candidates += 1
        self.revisions += outcome.revisions
        self.prunes += outcome.prunes
        self.tokens += outcome.tokens
        self.cached_calls += outcome.cached_calls
        if outcome.status == "accepted":
            self.accepted += 1
        else:
            self.rejected += 1
            key = outcome.validator or outcome.stage
            self.rejected_by[key] = self.rejected_by.get(key, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in {"settled", "errors"}}
        return {**data, "acceptance_rate": round(self.acceptance_rate, 4), "errors": self.errors[:5]}


class Driver(Protocol):
    def draw(self, index: int, settled_upto: int) -> Job: ...  # may raise NoCellsLeft

    def settle(self, outcome: CandidateOutcome) -> CandidateOutcome: ...  # a passed candidate: accepted or not


def pending_indices(done: set[int]) -> Iterator[int]:
    i = 0
    while True:
        if i not in done:
            yield i
        i += 1


class _InOrder:
    """The state of one ``run_in_order`` call."""

    def __init__(self, submit: Callable[[Job], Any], driver: Driver, limits: RunLimits, state: RunState,
                 report: RunReport, on_outcome: Callable[[CandidateOutcome, RunReport], None] | None) -> None:
        self.submit, self.driver, self.limits, self.report, self.on_outcome = submit, driver, limits, report, on_outcome
        report.earlier_accepted, report.earlier_tokens, report.resumed_done = state.accepted, state.tokens, len(state.done)
        self.finished: queue.Queue[Any] = queue.Queue()
        self.indices = pending_indices(state.done)
        self.next_index = next(self.indices)
        self.used = len(state.done)
        self.order: deque[int] = deque()  # drawn, not yet settled, in candidate order
        self.waiting: deque[Job] = deque()  # drawn, not yet submitted
        self.inflight: dict[Any, int] = {}
        self.results: dict[int, tuple[bool, Any]] = {}

    def stop_reason(self) -> str:
        limits, report = self.limits, self.report
        if limits.n is not None and report.accepted_total >= limits.n:
            return "target"
        if limits.token_budget is not None and report.tokens_total >= limits.token_budget:
            return "token_budget"
        return ""

    def draw_ready(self) -> None:
        """Draw every candidate whose draw may see the run now: all up to ``index - window`` settled."""
        while not self.report.stopped_by and self.used < self.limits.max_attempts:
            head = self.order[0] if self.order else self.next_index  # all below it are settled (or done earlier)
            if self.next_index - self.limits.window >= head:
                return
            report = self.report
            cap = self.limits.paced(report.accepted_total, report.resumed_done + report.candidates + report.failed)
            if cap is not None and len(self.order) >= cap:
                return
            try:
                job = self.driver.draw(self.next_index, self.next_index - self.limits.window)
            except NoCellsLeft as exc:
                self.report.stopped_by = "no_cells_left"
                self.report.errors.append(str(exc))
                return
            self.used += 1
            self.order.append(self.next_index)
            self.waiting.append(job)
            self.next_index = next(self.indices)

    def submit_waiting(self) -> None:
        while self.waiting and len(self.inflight) < self.limits.in_flight:
            job = self.waiting.popleft()
            future = self.submit(job)
            self.inflight[future] = job.index
            future.add_done_callback(self.finished.put)
            self.report.started += 1

    def collect_one(self) -> None:
        future = self.finished.get()
        index = self.inflight.pop(future)
        try:
            self.results[index] = (True, future.result())
        except Exception as exc:  # a bug or a lost worker costs this candidate, not the run
            self.results[index] = (False, exc)

    def settle_head(self) -> None:
        report = self.report
        index = self.order.popleft()
        ok, value = self.results.pop(index)
        report.settled.append(index)
        if not ok:
            report.failed += 1
            report.errors.append(f"candidate {index}: {type(value).__name__}: {value}")
        else:
            outcome = self.driver.settle(value)
            report.add(outcome)
            if self.on_outcome is not None:
                self.on_outcome(outcome, report)
        if not report.stopped_by:
            report.stopped_by = self.stop_reason()
            if report.stopped_by:  # drop what was drawn but not started
                dropped = {job.index for job in self.waiting}
                self.waiting.clear()
                kept = [i for i in self.order if i not in dropped]
                self.order.clear()
                self.order.extend(kept)

    def run(self) -> RunReport:
        self.report.stopped_by = self.stop_reason()
        self.draw_ready()
        while self.order:
            self.submit_waiting()
            self.collect_one()
            while self.order and self.order[0] in self.results:
                self.settle_head()
                self.draw_ready()
        if not self.report.stopped_by:
            self.report.stopped_by = "max_attempts" if self.used >= self.limits.max_attempts else "done"
        return self.report


def run_in_order(
    submit: Callable[[Job], Any],
    driver: Driver,
    limits: RunLimits,
    state: RunState | None = None,
    *,
    report: RunReport | None = None,
    on_outcome: Callable[[CandidateOutcome, RunReport], None] | None = None,
) -> RunReport:
    """Keep ``limits.in_flight`` candidates in flight; draw and settle in candidate order.

    ``submit(job)`` returns a future with ``add_done_callback`` and ``result`` (a
    concurrent, Prefect or Dask future) resolving to a ``CandidateOutcome``; one that
    raises counts as failed and is settled as nothing (a rerun tries it again).
    """
    return _InOrder(submit, driver, limits, state or RunState(), report or RunReport(), on_outcome).run()
