"""Candidates run anywhere, settled in candidate order: the same tasks whatever the runner.

A run's candidates may execute on a thread pool, on Dask workers in other processes or on
other machines. Two things must stay in one place, the *driver*: drawing each
candidate's cell (the sampler corrects coverage by what was accepted so far) and
settling a candidate that passed the gauntlet (accepted, or rejected as a duplicate of
a task accepted before it). Workers only compute.

Determinism comes from doing both in candidate order. Candidate ``i`` is drawn right
after candidate ``i - lookahead`` is settled, so its cell and the support sets it must
avoid depend on the outcomes of candidates ``0 .. i - lookahead - 1`` alone, never on
which worker finished first. With a deterministic model the same seed gives the same
accepted tasks on one thread, a thread pool or a Dask cluster. ``lookahead`` (at least
the concurrency) bounds how far execution may run ahead of settling: a slow candidate
holds back the draws behind it, not the ones already handed out.

Stopping: the attempt budget is exact (candidates beyond it are never drawn). When the
target or the token budget is reached, drawn candidates not yet started are dropped and
those in flight are finished and settled (their number depends on timing; the tasks
settled up to the stop do not).
"""

from __future__ import annotations

import queue
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from factory.taxonomy import NoCellsLeft


@dataclass(frozen=True)
class Job:
    """What a worker needs to run candidate ``index`` (small and picklable)."""

    index: int
    cell: str
    avoid: tuple[tuple[str, ...], ...] = ()  # support sets accepted in this run before the draw


@dataclass
class Budget:
    n: int | None = None  # accepted tasks wanted in this run (None: no target)
    max_attempts: int = 10  # candidates of this run, earlier tries of it included
    token_budget: int | None = None
    concurrency: int = 1
    lookahead: int | None = None  # default: twice the concurrency

    @property
    def window(self) -> int:
        return max(self.concurrency, self.lookahead or 2 * self.concurrency, 1)


@dataclass
class RunState:
    """Where a run stands before this try: finished candidates, accepted tasks, tokens."""

    done: set[int] = field(default_factory=set)
    accepted: int = 0
    tokens: int = 0

    @classmethod
    def read(cls, store: Any, run_id: str) -> "RunState":
        done = {
            int(r["idx"]) for r in store.query(
                "SELECT idx FROM candidates WHERE run_id = ? AND status IN ('accepted', 'rejected') AND idx IS NOT NULL",
                [run_id],
            )
        }
        # by candidates: a task row that landed just before a kill belongs to a candidate that
        # runs again and counts itself when it is settled
        accepted = int(store.scalar(
            "SELECT count(*) FROM candidates WHERE run_id = ? AND status = 'accepted'", [run_id]) or 0)
        tokens = int(store.scalar(
            "SELECT coalesce(sum(tokens_in) + sum(tokens_out), 0) FROM llm_calls WHERE run_id = ?", [run_id]
        ) or 0)
        return cls(done=done, accepted=accepted, tokens=tokens)


@dataclass
class LoopReport:
    accepted: int = 0  # this run's accepted tasks, earlier tries included
    rejected: int = 0
    failed: int = 0
    started: int = 0
    resumed_done: int = 0
    tokens: int = 0
    cached_calls: int = 0  # LLM answers the candidates got from the cache (a resumed run re-asks)
    stopped_by: str = ""
    settled: list[int] = field(default_factory=list)  # candidate indices in the order they were settled
    errors: list[str] = field(default_factory=list)


class Driver(Protocol):
    def draw(self, index: int) -> Job: ...  # may raise NoCellsLeft

    def settle(self, outcome: Any) -> Any: ...  # the final outcome (a passed candidate accepted or not)


def _field(outcome: Any, name: str) -> Any:
    value = getattr(outcome, name, None)
    if value is None and isinstance(outcome, dict):
        value = outcome.get(name)
    return value


def pending_indices(done: set[int]) -> Iterator[int]:
    i = 0
    while True:
        if i not in done:
            yield i
        i += 1


def run_in_order(
    submit: Callable[[Job], Any],
    driver: Driver,
    budget: Budget,
    state: RunState | None = None,
    *,
    on_outcome: Callable[[int, Any], None] | None = None,
) -> LoopReport:
    """Keep ``budget.concurrency`` candidates in flight; draw and settle in candidate order.

    ``submit(job)`` returns a future with ``add_done_callback`` and ``result`` (a
    concurrent, Prefect or Dask future). A future that raises counts as failed: it is
    settled as nothing (a rerun tries that candidate again).
    """
    state = state or RunState()
    report = LoopReport(accepted=state.accepted, tokens=state.tokens, resumed_done=len(state.done))
    finished: queue.Queue[Any] = queue.Queue()
    indices = pending_indices(state.done)
    used = len(state.done)
    order: deque[int] = deque()  # drawn, not yet settled, in candidate order
    waiting: deque[Job] = deque()  # drawn, not yet submitted
    inflight: dict[Any, int] = {}
    results: dict[int, tuple[bool, Any]] = {}

    def stop_reason() -> str:
        if budget.n is not None and report.accepted >= budget.n:
            return "target"
        if budget.token_budget is not None and report.tokens >= budget.token_budget:
            return "token_budget"
        return ""

    def draw() -> None:
        nonlocal used
        if report.stopped_by or used >= budget.max_attempts:
            return
        index = next(indices)
        try:
            job = driver.draw(index)
        except NoCellsLeft as exc:
            report.stopped_by = "no_cells_left"
            report.errors.append(str(exc))
            return
        used += 1
        order.append(index)
        waiting.append(job)

    report.stopped_by = stop_reason()
    while len(order) < budget.window and not report.stopped_by and used < budget.max_attempts:
        draw()
    while order:
        while waiting and len(inflight) < budget.concurrency:
            job = waiting.popleft()
            future = submit(job)
            inflight[future] = job.index
            future.add_done_callback(finished.put)
            report.started += 1
        future = finished.get()
        index = inflight.pop(future)
        try:
            results[index] = (True, future.result())
        except Exception as exc:  # a bug or a lost worker costs this candidate, not the run
            results[index] = (False, exc)
        while order and order[0] in results:
            index = order.popleft()
            ok, value = results.pop(index)
            report.settled.append(index)
            if not ok:
                report.failed += 1
                report.errors.append(f"candidate {index}: {type(value).__name__}: {value}")
            else:
                outcome = driver.settle(value)
                status = str(_field(outcome, "status") or "")
                report.accepted += status == "accepted"
                report.rejected += status == "rejected"
                report.tokens += int(_field(outcome, "tokens") or 0)
                report.cached_calls += int(_field(outcome, "cached_calls") or 0)
                if on_outcome is not None:
                    on_outcome(index, outcome)
            if not report.stopped_by:
                report.stopped_by = stop_reason()
                if report.stopped_by:  # drop what was drawn but not started
                    dropped = {job.index for job in waiting}
                    waiting.clear()
                    kept = [i for i in order if i not in dropped]
                    order.clear()
                    order.extend(kept)
            draw()
    if not report.stopped_by:
        report.stopped_by = "max_attempts" if used >= budget.max_attempts else "done"
    return report
