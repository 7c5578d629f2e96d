"""Running a run's candidates: in this process (``factory generate``) or on a flow's task runner.

Both go the same way: a driver in this process draws and settles in order
(``settle.Settler``), the scheduler keeps candidates in flight (``scheduler``), each
candidate runs in a context built once per process (``context``). Only where the
candidates run differs: a thread pool here, Prefect tasks on threads or Dask workers
in ``flows/generation.py``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from factory.generate.candidate import run_candidate
from factory.generate.context import ContextSpec, make_context
from factory.generate.outcome import CandidateOutcome
from factory.generate.scheduler import RunLimits, RunReport, RunState, run_in_order
from factory.generate.scope import TaskScope
from factory.generate.settle import Settler
from factory.store.runs import record_run


@dataclass
class GenerationRun:
    """A run's generation step: where, what counts, and how much."""

    store: str
    index_dir: str
    settings: Any
    lang: str
    run_id: str
    seed: int  # the seed of the candidates' random streams
    limits: RunLimits
    training_set: str | None = None

    @property
    def scope(self) -> TaskScope:
        return TaskScope(run_id=self.run_id, lang=self.lang, training_set=self.training_set)


def start_run(run: GenerationRun) -> tuple[Settler, ContextSpec, RunState]:
    """The driver (this process), the workers' recipe and where the run stands."""
    from factory.store import Store

    store = Store(run.store)
    state = RunState.read(store, run.run_id)
    settler = Settler(store, run.settings, lang=run.lang, run_id=run.run_id, seed=run.seed, scope=run.scope)
    spec = ContextSpec(store=str(Path(run.store).resolve()), index_dir=str(Path(run.index_dir).resolve()),
                       settings_json=run.settings.dump(), lang=run.lang, run_id=run.run_id, seed=run.seed,
                       training_set=run.training_set, cutoff=settler.started_at)
    return settler, spec, state


def run_generation(
    store: Any,
    index: Any,
    llm: Any,
    settings: Any,
    *,
    n: int,
    lang: str,
    run_id: str,
    seed: int,
    max_attempts: int | None = None,
    token_budget: int | None = None,
    concurrency: int | None = None,
    progress: Callable[[CandidateOutcome, RunReport], None] | None = None,
    difficulty: Any = None,
    taxonomy: Any = None,
) -> RunReport:
    """Candidates on a thread pool until ``n`` are accepted, ``max_attempts`` candidates were
    tried (earlier runs of the same run id included) or ``token_budget`` tokens were spent."""
    started = time.perf_counter()
    limits = RunLimits.from_settings(settings, n=n, max_attempts=max_attempts, token_budget=token_budget,
                                     concurrency=concurrency)
    record_run(store, run_id, "generate", settings)
    state = RunState.read(store, run_id)
    scope = TaskScope(run_id=run_id, lang=lang)
    settler = Settler(store, settings, lang=lang, run_id=run_id, seed=seed, scope=scope, taxonomy=taxonomy)
    ctx = None
    try:
        ctx = make_context(store, index, llm, settings, lang=lang, run_id=run_id, seed=seed, scope=scope,
                           cutoff=settler.started_at, taxonomy=taxonomy, difficulty=difficulty)
        with ThreadPoolExecutor(max_workers=limits.in_flight, thread_name_prefix="candidate") as pool:
            report = run_in_order(lambda job: pool.submit(run_candidate, job, ctx), settler, limits, state,
                                  report=RunReport(run_id=run_id, n=n), on_outcome=progress)
    finally:
        settler.close()
        if ctx is not None:
            ctx.close()
    report.elapsed_s = time.perf_counter() - started
    return report
