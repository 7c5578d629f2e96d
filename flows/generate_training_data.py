"""`generate_training_data`: one run of a training set that grows run after run.

A scheduled deployment (``flows/deployments.py``) starts this every few hours with the
same parameters. Each run

    prepares the store (ingest and the fixed index: nothing to do when unchanged)
      -> gets its own run id and random streams (``factory/generate/scope.py``)
      -> generates on the task runner (threads or Dask, ``flows/generation.py``) until
         its per-run budget is spent: ``max_attempts`` candidates, ``token_budget``
         tokens, or ``n`` accepted tasks
      -> optionally exports the training data (``flows/export_training_data.py``) into ``export_out``

Coverage and duplicates count the whole training set (every earlier run, and runs
going on at the same time), so the set grows without duplicates towards the taxonomy's
target shares. A crashed run can be continued by passing its ``run_id`` again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from factory.errors import FactoryError
from factory.generate import (
    TRAINING_COMMAND, GenerationRun, RunLimits, stream_seed, training_run_id, training_set_summary,
)
from factory.llm.registry import require_language
from factory.params import TrainingRunParams
from factory.settings import load_settings
from factory.store import Store
from factory.store.runs import record_run
from flows.generation import check_task_runner, prepare, run_generation_step


class TrainingDataError(FactoryError):
    pass


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    value = flow_run.id
    return str(value) if value else None


def resolve_training_run(params: TrainingRunParams) -> GenerationRun:
    """Settings (file < environment < these values) and the run's identity."""
    if params.lang not in {"en", "ru"}:
        raise TrainingDataError(f"lang must be en or ru, got {params.lang!r}")
    if not Path(params.corpus).exists():
        raise TrainingDataError(f"{params.corpus}: corpus not found")
    check_task_runner(params.task_runner)
    settings = load_settings(Path(params.config) if params.config else None, **{
        "lang": params.lang, "seed": params.seed, "llm.spec": params.llm_spec,
        "training_data.name": params.training_set, "training_data.max_attempts": params.max_attempts,
        "training_data.token_budget": params.token_budget, "training_data.n": params.n,
        "generate.concurrency": params.concurrency, "dask.address": params.dask_address,
    })
    require_language(settings.llm.spec, params.lang)
    t = settings.training_data
    run_id = params.run_id or training_run_id(t.name, _flow_run_id())
    limits = RunLimits.from_settings(settings, n=t.n, max_attempts=t.max_attempts, token_budget=t.token_budget)
    return GenerationRun(store=params.store, index_dir=str(Path(params.store) / f"index-{params.lang}"),
                         settings=settings, lang=params.lang, run_id=run_id, seed=stream_seed(settings.seed, run_id),
                         limits=limits, training_set=t.name)


@flow(name="generate-training-data", persist_result=False)
def generate_training_data(
    corpus: str,
    lang: str,
    store: str,
    llm_spec: str | None = None,
    training_set: str | None = None,
    max_attempts: int | None = None,
    token_budget: int | None = None,
    n: int | None = None,
    seed: int | None = None,
    config: str | None = None,
    task_runner: str = "threads",
    concurrency: int | None = None,
    dask_address: str | None = None,
    export_out: str | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Append one run's accepted tasks to the training set; its per-run budget bounds it."""
    params = TrainingRunParams(**locals())  # the signature is TrainingRunParams' fields (tests/flows/test_params.py)
    started = time.perf_counter()
    run = resolve_training_run(params)
    logger = get_run_logger()
    db = Store(run.store)
    name = run.settings.training_data.name
    before = training_set_summary(db, name, lang)["tasks"]
    record_run(db, run.run_id, TRAINING_COMMAND, run.settings)  # before any task: membership of the set
    logger.info("training set %r (%s): %d tasks so far; run %s, budget %s", name, lang, before, run.run_id,
                {"max_attempts": run.limits.max_attempts, "token_budget": run.limits.token_budget, "n": run.limits.n})
    prepare(corpus, run.store, run.index_dir, lang, run.settings)
    report = run_generation_step(run, params.task_runner)
    after = training_set_summary(db, name, lang)
    logger.info("training set %r: %d -> %d tasks (this run %d); duplicates: %d support sets, %d questions",
                name, before, after["tasks"], after["runs"].get(run.run_id, 0), after["duplicate_support_sets"],
                after["duplicate_questions"])
    result: dict[str, Any] = {
        "training_set": name, "lang": lang, "run_id": run.run_id, "stream_seed": run.seed,
        "tasks_before": before, "tasks_after": after["tasks"], "accepted": report.accepted_total,
        "rejected": report.rejected, "failed": report.failed, "candidates_started": report.started,
        "candidates_resumed": report.resumed_done, "stopped_by": report.stopped_by, "tokens": report.tokens_total,
        "cached_calls": report.cached_calls, "task_runner": task_runner,
        "duplicate_support_sets": after["duplicate_support_sets"], "duplicate_questions": after["duplicate_questions"],
    }
    if export_out:
        from flows.export_training_data import export_training_data

        exported = export_training_data(store=run.store, out=export_out, config=config)
        result["export"] = {"out": export_out, "tasks": exported["tasks"], "pools": {
            lang: {"sft": len(pools["sft"]), "rl": len(pools["rl"]), "excluded": len(pools["excluded"])}
            for lang, pools in exported["pools"].items()}}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result
