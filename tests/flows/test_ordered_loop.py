"""The in-order candidate loop without Prefect: determinism, bounds, targets, budgets, resume."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from factory.generate import CandidateOutcome, Job, RunLimits, RunState, run_in_order
from factory.taxonomy import NoCellsLeft


def Outcome(index: int, status: str, tokens: int, cell: str) -> CandidateOutcome:
    return CandidateOutcome(candidate_id=f"c{index}", run_id="toy", index=index, seed=0, lang="en", status=status,
                            cell=cell, tokens=tokens)


class ToyDriver:
    """Draws a 'cell' from the state settled so far; settles 'passed' into accepted or duplicate."""

    def __init__(self, accept_every: int = 3, fail_draw_at: int | None = None) -> None:
        self.accepted = 0
        self.accept_every = accept_every
        self.fail_draw_at = fail_draw_at
        self.jobs: list[Job] = []
        self.settled: list[int] = []
        self.seen_at_draw: dict[int, set[int]] = {}

    def draw(self, index: int, settled_upto: int) -> Job:
        if index == self.fail_draw_at:
            raise NoCellsLeft("every cell is unsupported")
        self.seen_at_draw[index] = set(self.settled)
        job = Job(index=index, cell=f"cell-{self.accepted % 5}", settled_upto=settled_upto,
                  avoid=tuple((str(i),) for i in range(self.accepted)))
        self.jobs.append(job)
        return job

    def settle(self, outcome: Outcome) -> Outcome:
        self.settled.append(outcome.index)
        if outcome.status == "passed":
            outcome.status = "accepted"
            self.accepted += 1
        return outcome


def _runner(driver: ToyDriver, *, seed: int = 0, tokens: int = 10, fail_at: int | None = None,
            delay: float = 0.004):
    pool = ThreadPoolExecutor(max_workers=16)
    lock = threading.Lock()
    live = {"now": 0, "peak": 0, "seen": [], "ahead": 0}
    rng = random.Random(seed)

    def work(job: Job, pause: float) -> Outcome:
        with lock:
            live["now"] += 1
            live["peak"] = max(live["peak"], live["now"])
            live["seen"].append(job.index)
            unsettled = [i for i in live["seen"] if i not in driver.settled]
            live["ahead"] = max(live["ahead"], job.index - min(unsettled))
        time.sleep(pause)  # finish out of order
        with lock:
            live["now"] -= 1
        if job.index == fail_at:
            raise RuntimeError(f"a bug in candidate {job.index}")
        passed = (int(job.cell.split("-")[1]) + job.index) % driver.accept_every == 0  # depends on the draw
        return Outcome(job.index, "passed" if passed else "rejected", tokens, job.cell)

    def submit(job: Job):
        return pool.submit(work, job, delay * rng.randint(0, 5))

    return submit, live, pool


@pytest.mark.parametrize("concurrency", [2, 5])
def test_the_same_jobs_and_outcomes_whatever_the_timing(concurrency: int) -> None:
    runs = []
    for seed in (1, 2, 3):
        driver = ToyDriver()
        submit, live, pool = _runner(driver, seed=seed)
        report = run_in_order(submit, driver, RunLimits(max_attempts=30, concurrency=concurrency,
                                                        lookahead=2 * concurrency))
        pool.shutdown()
        assert report.settled == list(range(30)) and report.stopped_by == "max_attempts"
        assert live["peak"] <= concurrency
        assert live["ahead"] < 2 * concurrency  # never further ahead of settling than the lookahead
        runs.append(([(j.index, j.cell, j.avoid) for j in driver.jobs], report.accepted))
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][1] >= 10


def test_stops_at_the_target_with_bounded_concurrency() -> None:
    driver = ToyDriver(accept_every=3)
    submit, live, pool = _runner(driver, fail_at=5)
    report = run_in_order(submit, driver, RunLimits(n=4, max_attempts=100, concurrency=3))
    pool.shutdown()
    assert report.stopped_by == "target"
    assert report.accepted >= 4 and live["peak"] <= 3
    assert report.failed == 1 and "candidate 5" in report.errors[0]
    # settled in order, none skipped; what started after the stop was in flight then (at most 3)
    assert report.settled == list(range(len(report.settled)))
    assert sorted(live["seen"]) == list(range(len(live["seen"])))
    assert report.started == len(live["seen"]) == len(report.settled)


def test_budgets_and_resume() -> None:
    driver = ToyDriver(accept_every=100)
    submit, live, pool = _runner(driver)
    # candidates 0, 1 and 3 finished in an earlier try: only the others run, within the budget
    report = run_in_order(submit, driver, RunLimits(n=50, max_attempts=6, concurrency=2),
                          RunState(done={0, 1, 3}, accepted=1, tokens=0))
    assert report.stopped_by == "max_attempts"
    assert sorted(live["seen"]) == [2, 4, 5] and report.settled == [2, 4, 5]
    assert report.accepted_total == 1 and report.accepted == 0 and report.resumed_done == 3

    driver = ToyDriver(accept_every=100)
    submit, live, pool = _runner(driver, tokens=10)
    report = run_in_order(submit, driver, RunLimits(n=50, max_attempts=100, token_budget=35, concurrency=2),
                          RunState(tokens=5))
    pool.shutdown()
    assert report.stopped_by == "token_budget"
    assert report.tokens_total >= 35 and len(live["seen"]) <= 5  # 5 + 3*10 reaches 35; at most 2 more in flight


def test_no_cells_left_stops_the_run() -> None:
    driver = ToyDriver(fail_draw_at=4)
    submit, live, pool = _runner(driver)
    report = run_in_order(submit, driver, RunLimits(max_attempts=20, concurrency=2))
    pool.shutdown()
    assert report.stopped_by == "no_cells_left" and report.settled == [0, 1, 2, 3]
    assert "unsupported" in report.errors[-1]


@pytest.mark.parametrize("done", [set(), {0, 1, 3, 6}], ids=["fresh", "resumed"])
def test_a_draw_waits_for_every_candidate_lookahead_before_it(done: set[int]) -> None:
    """Candidate i is drawn once 0 .. i - lookahead are settled (or finished by an earlier try),
    whatever finished first: what a draw may see never depends on timing or on a resume."""
    driver = ToyDriver()
    submit, live, pool = _runner(driver, seed=4)
    limits = RunLimits(max_attempts=16, concurrency=2, lookahead=3)
    report = run_in_order(submit, driver, limits, RunState(done=set(done)))
    pool.shutdown()
    assert report.stopped_by == "max_attempts"
    for job in driver.jobs:
        assert job.settled_upto == job.index - limits.window
        needed = set(range(job.settled_upto + 1)) - done
        assert needed <= driver.seen_at_draw[job.index], job


class WindowDriver(ToyDriver):
    """Draws from the candidates settled up to ``settled_upto`` only, as the run's driver does."""

    def __init__(self, accept_every: int = 3) -> None:
        super().__init__(accept_every=accept_every)
        self.accepted_at: list[int] = []

    def draw(self, index: int, settled_upto: int) -> Job:
        seen = [i for i in self.accepted_at if i <= settled_upto]
        job = Job(index=index, cell=f"cell-{len(seen) % 5}", settled_upto=settled_upto,
                  avoid=tuple((str(i),) for i in seen))
        self.jobs.append(job)
        return job

    def settle(self, outcome: Outcome) -> Outcome:
        outcome = super().settle(outcome)
        if outcome.status == "accepted":
            self.accepted_at.append(outcome.index)
        return outcome


def _until_target(report, driver: WindowDriver, n: int) -> tuple[int, list]:
    """The candidate whose settling reached the target, and the jobs drawn up to it."""
    stop = sorted(driver.accepted_at)[n - 1]
    return stop, [(j.index, j.cell, j.avoid) for j in sorted(driver.jobs, key=lambda j: j.index) if j.index <= stop]


def test_a_target_paces_its_draws_and_keeps_its_tasks() -> None:
    """A lookahead sized for a server (64) and a target of 6: unpaced, the run keeps 16
    candidates in flight to the end and settles them all past the target; paced, it draws
    about what the target still needs, and the tasks up to the target are the same."""
    runs = {}
    for margin in (0.0, 1.25):
        driver = WindowDriver(accept_every=3)
        submit, live, pool = _runner(driver, seed=5)
        report = run_in_order(submit, driver, RunLimits(n=6, max_attempts=500, concurrency=16, lookahead=64,
                                                        target_margin=margin))
        pool.shutdown()
        assert report.stopped_by == "target" and report.settled == list(range(len(report.settled)))
        runs[margin] = (report, *_until_target(report, driver, 6))
    (unpaced, stop, jobs), (paced, paced_stop, paced_jobs) = runs[0.0], runs[1.25]
    assert (paced_stop, paced_jobs) == (stop, jobs)  # the same candidates and tasks up to the target
    assert unpaced.started - (stop + 1) >= 8  # unpaced: a lookahead's worth still in flight at the stop
    assert paced.started - (stop + 1) <= 4  # paced: what the target still needed, with its margin
    assert paced.accepted < unpaced.accepted


def test_pacing_needs_a_target_and_a_margin() -> None:
    assert RunLimits(n=None, target_margin=1.25).paced(0, 0) is None
    assert RunLimits(n=10, target_margin=0).paced(0, 0) is None
    limits = RunLimits(n=10, target_margin=1.25)
    assert limits.paced(0, 0) == 25  # nothing settled yet: half are taken to pass
    assert limits.paced(4, 38) == 60  # a run that accepts about 1 in 8: 1.25 x 6 / (5 / 40)
    assert limits.paced(9, 18) == 3  # one left at a rate of one half
    assert limits.paced(0, 98) == 1250  # accepting nothing: the lookahead alone caps the draws
