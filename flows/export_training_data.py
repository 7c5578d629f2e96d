"""`export_training_data`: the training-data export as a Prefect flow (thin wiring).

The scheduled training-data deployment calls this at its end, as a subflow
(``export_training_data(store=..., out=..., teacher=...)``) or through the plain
function ``run_export`` from its own task. Reruns are safe because of the store's
keys: pools only grow, teacher episodes already linked to a task are not run again,
and the LLM gateway answers repeated calls from its cache. Caching and result
persistence are off, as in the build flow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from factory.settings import load_settings
from factory.store import Store

TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}


def run_export(
    store: str | Path,
    out: str | Path,
    *,
    teacher: str | None = None,
    index: str | Path | None = None,
    exclude_benchmarks: list[str] | None = None,
    sft_share: float | None = None,
    seed: int | None = None,
    langs: list[str] | None = None,
    config: str | Path | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Resolve settings (file, environment, these values) and export; the summary as a dict."""
    from factory.training.export import export_training

    settings = load_settings(Path(config) if config else None,
                             **{"seed": seed, "training.sft_share": sft_share, "training.teacher": teacher})
    summary = export_training(Store(store, create=False), out, settings, index_dir=index,
                              exclude_benchmarks=exclude_benchmarks or [], langs=langs, run_id=run_id)
    return summary.model_dump(mode="json")


@task(name="export-training", **TASK_OPTIONS)
def export_task(params: dict[str, Any]) -> dict[str, Any]:
    return run_export(**params)


@flow(name="export-training-data", persist_result=False, validate_parameters=True)
def export_training_data(
    store: str,
    out: str,
    teacher: str | None = None,
    index: str | None = None,
    exclude_benchmarks: list[str] | None = None,
    sft_share: float | None = None,
    seed: int | None = None,
    langs: list[str] | None = None,
    config: str | None = None,
) -> dict[str, Any]:
    """Pools, teacher episodes, round-sliced SFT samples, the datamix and the RL pool, into OUT."""
    summary = export_task({
        "store": store, "out": out, "teacher": teacher, "index": index, "exclude_benchmarks": exclude_benchmarks,
        "sft_share": sft_share, "seed": seed, "langs": langs, "config": config,
    })
    logger = get_run_logger()
    for lang, pools in sorted(summary["pools"].items()):
        logger.info("%s: SFT %d, RL %d, excluded %d tasks; samples %s; TV %.3f -> %.3f", lang, len(pools["sft"]),
                    len(pools["rl"]), len(pools["excluded"]), summary["samples"].get(lang, {}),
                    summary["tv_before"].get(lang, 0.0), summary["tv_after"].get(lang, 0.0))
    logger.info("%d new teacher episodes; pools disjoint: %s", summary["episodes_run"], summary["disjoint"])
    return summary
