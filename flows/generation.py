"""Wiring shared by the flows that generate tasks: `build_benchmark` and `generate_training_data`.

    prepare (ingest, then the fixed index; under a store lock, so concurrent runs on one
             store do not build the same index twice)
      -> a driver in this process draws cells and settles candidates in order
         (factory/generate/scheduler.py, factory/generate/settle.py)
      -> one Prefect task per candidate on the task runner: threads here, or Dask
         workers (a local cluster, or a running one at ``dask.address``)

The loop is the one ``factory generate`` runs (factory/generate/run.py); only where
the candidates run differs.

Reruns are safe because of database keys, not Prefect caching: every task here has
caching and result persistence off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import Quote, quote

from factory.errors import FactoryError
from factory.files import file_lock
from factory.generate import (
    ContextSpec, GenerationRun, Job, RunReport, RunState, Settler, close_contexts, run_in_order, run_job, start_run,
)
from factory.settings import Settings
from factory.store import Store

TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
COMPACT_EVERY = 40  # settled candidates between compactions of the tables they write
COMPACT_TABLES = ("candidates", "drafts", "verdicts", "tasks", "llm_calls")
TASK_RUNNERS = ("threads", "dask")


class FlowError(FactoryError):
    pass


def check_task_runner(kind: str) -> None:
    if kind not in TASK_RUNNERS:
        raise FlowError(f"unknown task runner {kind!r}; choose threads or dask")
    if kind == "dask":
        try:
            import prefect_dask  # noqa: F401
        except ImportError as exc:
            raise FlowError("task runner 'dask' needs the dask extra: pip install -e '.[dask]'") from exc


def make_task_runner(kind: str, concurrency: int, settings: Settings) -> Any:
    """Threads in this process, or Dask: the cluster at ``dask.address``, else a local one."""
    check_task_runner(kind)
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=max(1, concurrency))
    from prefect_dask import DaskTaskRunner

    if settings.dask.address:
        return DaskTaskRunner(address=settings.dask.address)
    return DaskTaskRunner(cluster_kwargs={
        "n_workers": settings.dask.workers, "threads_per_worker": settings.dask.threads_per_worker,
        "processes": True, "host": "127.0.0.1", "dashboard_address": None,  # loopback only, no dashboard
    })


# ----------------------------------------------------------------------- tasks
@task(name="ingest", **TASK_OPTIONS)
def ingest_corpus(corpus: str, store: str, lang: str, settings: Settings) -> dict[str, Any]:
    from factory.ingest import ingest

    summary = ingest(Path(corpus), Store(store), lang, settings)
    get_run_logger().info(
        "ingest: %d documents read, %d new, %d changed, %d unchanged, %d chunks written",
        summary.docs_read, summary.docs_new, summary.docs_changed, summary.docs_unchanged, summary.chunks_written,
    )
    return summary.model_dump()


@task(name="fixed-index", **TASK_OPTIONS)
def fixed_index(store: str, index_dir: str, lang: str, settings: Settings) -> str:
    """Reopen the index when it still matches the store's chunks, else (re)build it."""
    from factory.index.base import SearchIndexError
    from factory.index.fixed import build_index, open_index

    db = Store(store)
    logger = get_run_logger()
    try:
        open_index(Path(index_dir), store=db)
        logger.info("index: %s matches the store, reused", index_dir)
    except SearchIndexError as exc:
        logger.info("index: building %s (%s)", index_dir, exc)
        dense = settings.build.dense
        build_index(db, Path(index_dir), lang, settings, dense=None if dense == "none" else dense, progress=False)
    return index_dir


def prepare(corpus: str, store: str, index_dir: str, lang: str, settings: Settings) -> None:
    """Ingest (idempotent) and the fixed index, one run at a time per store."""
    with file_lock(Path(store) / "locks" / "prepare.lock"):
        ingest_corpus(corpus, store, lang, quote(settings))
        fixed_index(store, index_dir, lang, quote(settings))


@task(name="candidate", task_run_name="candidate-{index}", **TASK_OPTIONS)
def candidate(index: int, job: Job, worker: ContextSpec) -> Any:
    return run_job(_unquoted(job), _unquoted(worker))


def _unquoted(value: Any) -> Any:
    # Prefect unwraps a quoted argument on threads; prefect-dask 0.3.7 delivers the wrapper
    # (a one-field named tuple) rebuilt as plain one-item tuples, ((value,),)
    while isinstance(value, tuple) and len(value) == 1:
        value = value[0].unquote() if isinstance(value, Quote) else value[0]
    return value


def submit_candidate(job: Job, worker: ContextSpec) -> Any:
    # quoted: Prefect would otherwise look for earlier results inside the job (matching them by
    # object identity, a chunk id shared with an accepted task shows as a false dependency)
    return candidate.submit(job.index, quote(job), quote(worker))


# ------------------------------------------------------------------ generation
def compact(store: Store) -> None:
    """Merge the small segments candidates flush at every step, so readers stay fast
    (the live view, `factory rejected`, the export); safe while writers run."""
    for table in COMPACT_TABLES:
        store.compact(table)


# What a subflow needs but that cannot be a flow parameter (parameters go to the
# Prefect API as JSON): by run id, this process only.
_LIVE: dict[str, tuple[GenerationRun, Settler, ContextSpec, RunState]] = {}


def live_run(run_id: str) -> tuple[GenerationRun, Settler, ContextSpec, RunState]:
    # a function, not the dict itself, in the flow's body: Dask pickles the flow with the
    # context it sends to workers, and a global the body names would travel with it
    return _LIVE[run_id]


@flow(name="generate-candidates", persist_result=False, validate_parameters=False)
def generate_candidates(run_id: str) -> RunReport:
    """One Prefect task per candidate, on this subflow's task runner; settled in order."""
    run, driver, worker, state = live_run(run_id)
    logger = get_run_logger()
    if state.done:
        logger.info("resuming %s: %d candidates finished earlier, %d accepted", run_id, len(state.done), state.accepted)
    settled = 0

    def log(outcome: Any, report: RunReport) -> None:
        nonlocal settled
        logger.info("candidate %d: %s%s", outcome.index, outcome.status,
                    f" ({outcome.validator or outcome.stage}: {outcome.reason})" if outcome.status == "rejected" else "")
        settled += 1
        if settled % COMPACT_EVERY == 0:
            compact(Store(run.store))

    report = run_in_order(lambda job: submit_candidate(job, worker), driver, run.limits, state,
                          report=RunReport(run_id=run_id, n=run.limits.n), on_outcome=log)
    for error in report.errors[:5]:
        logger.warning(error)
    logger.info("generation stopped (%s): %d accepted, %d rejected, %d failed, %d tokens",
                report.stopped_by, report.accepted, report.rejected, report.failed, report.tokens)
    return report


def run_generation_step(run: GenerationRun, task_runner: str) -> RunReport:
    """The candidates of a run on the chosen task runner, until its budget is spent."""
    driver, worker, state = start_run(run)
    runner = make_task_runner(task_runner, run.limits.in_flight, run.settings)
    _LIVE[run.run_id] = (run, driver, worker, state)
    try:
        return generate_candidates.with_options(task_runner=runner)(run.run_id)
    finally:
        _LIVE.pop(run.run_id, None)
        driver.close()
        close_contexts(run.run_id)  # this process's (threads); Dask workers flushed every row already
        compact(Store(run.store))
