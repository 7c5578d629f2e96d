"""`generate_training_data`: one run of a training set that grows run after run.

A scheduled deployment (``flows/deployments.py``) starts this every few hours with the
same parameters. Each run

    prepares the store (ingest and the fixed index: nothing to do when unchanged)
      -> gets its own run id and random streams (``factory/training_set.py``)
      -> generates on the task runner (threads or Dask, ``flows/generation.py``) until
         its per-run budget is spent: ``max_attempts`` candidates, ``token_budget``
         tokens, or ``n`` accepted tasks
      -> optionally exports the training data (``flows/training.py``) into ``export_out``

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
from factory.ordered import Budget
from factory.settings import load_settings
from factory.store import Store
from factory.training_set import TRAINING_COMMAND, stream_seed, training_run_id, training_set_summary
from flows.generation import GenerationRun, check_task_runner, prepare, run_generation_step


class TrainingDataError(FactoryError):
    pass


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    value = flow_run.id
    return str(value) if value else None


def resolve_training_run(
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
    run_id: str | None = None,
) -> GenerationRun:
    """Settings (file < environment < these values) and the run's identity."""
    if lang not in {"en", "ru"}:
        raise TrainingDataError(f"lang must be en or ru, got {lang!r}")
    if not Path(corpus).exists():
        raise TrainingDataError(f"{corpus}: corpus not found")
    check_task_runner(task_runner)
    settings = load_settings(Path(config) if config else None, **{
        "lang": lang, "seed": seed, "llm.spec": llm_spec, "training_data.name": training_set,
        "training_data.max_attempts": max_attempts, "training_data.token_budget": token_budget,
        "training_data.n": n, "generate.concurrency": concurrency, "dask.address": dask_address,
    })
    name = settings.training_data.name
    run_id = run_id or training_run_id(name, _flow_run_id())
    budget = Budget(n=settings.training_data.n, max_attempts=settings.training_data.max_attempts,
                    token_budget=settings.training_data.token_budget, concurrency=settings.generate.concurrency,
                    lookahead=settings.generate.lookahead)
    return GenerationRun(store=store, index_dir=str(Path(store) / f"index-{lang}"), settings=settings, lang=lang,
                         run_id=run_id, seed=stream_seed(settings.seed, run_id), budget=budget, training_set=name)


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
    run_id: str | None = None,
    export_out: str | None = None,
) -> dict[str, Any]:
    """Append one run's accepted tasks to the training set; its per-run budget bounds it."""
    from factory.store.runs import record_run

    started = time.perf_counter()
    run = resolve_training_run(corpus, lang, store, llm_spec, training_set, max_attempts, token_budget, n, seed,
                               config, task_runner, concurrency, dask_address, run_id)
    logger = get_run_logger()
    db = Store(run.store)
    name = run.settings.training_data.name
    before = training_set_summary(db, name, lang)["tasks"]
    record_run(db, run.run_id, TRAINING_COMMAND, run.settings)  # before any task: membership of the set
    logger.info("training set %r (%s): %d tasks so far; run %s, budget %s", name, lang, before, run.run_id,
                {"max_attempts": run.budget.max_attempts, "token_budget": run.budget.token_budget, "n": run.budget.n})
    prepare(corpus, run.store, run.index_dir, lang, run.settings)
    report = run_generation_step(run, task_runner)
    after = training_set_summary(db, name, lang)
    logger.info("training set %r: %d -> %d tasks (this run %d); duplicates: %d support sets, %d questions",
                name, before, after["tasks"], after["runs"].get(run.run_id, 0), after["duplicate_support_sets"],
                after["duplicate_questions"])
    result: dict[str, Any] = {
        "training_set": name, "lang": lang, "run_id": run.run_id, "stream_seed": run.seed,
        "tasks_before": before, "tasks_after": after["tasks"], "accepted": report.accepted,
        "rejected": report.rejected, "failed": report.failed, "candidates_started": report.started,
        "candidates_resumed": report.resumed_done, "stopped_by": report.stopped_by, "tokens": report.tokens,
        "cached_calls": report.cached_calls, "task_runner": task_runner,
        "duplicate_support_sets": after["duplicate_support_sets"], "duplicate_questions": after["duplicate_questions"],
    }
    if export_out:
        from flows.training import export_training_data

        exported = export_training_data(store=run.store, out=export_out, config=config)
        result["export"] = {"out": export_out, "tasks": exported["tasks"], "pools": {
            lang: {"sft": len(pools["sft"]), "rl": len(pools["rl"]), "excluded": len(pools["excluded"])}
            for lang, pools in exported["pools"].items()}}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result
