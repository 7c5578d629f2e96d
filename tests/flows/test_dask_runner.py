"""A build on a local two-worker Dask cluster gives the same tasks as one on this machine's
threads, and as `factory generate` with the same seed.

Same seed, same scripted model (``fake:factory``), same concurrency: candidates are drawn
and settled in order by one driver (factory/generate/settle.py), so which worker runs what,
and when it finishes, changes nothing. The budget is an attempt budget, which the loop
keeps exactly (a target reached mid-flight would let timing decide the tail).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factory.store import Store

from training_helpers import (CORPUS_EN, copy_store, factory_generate, prepare_store,  # noqa: F401 - a fixture
                              relaxed_shortcut, run_outcomes)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("relaxed_shortcut")]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_store(tmp_path_factory.mktemp("dask_runner") / "store")


@pytest.fixture()
def dask_cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


def _build(out: Path, task_runner: str) -> dict:
    from flows.build_benchmark import build_benchmark

    return build_benchmark(lang="en", corpus=str(CORPUS_EN), n=50, llm_spec="fake:factory", out=str(out),
                           seed=5, concurrency=2, max_attempts=10, task_runner=task_runner)


def _writer_pids(store: Store, table: str) -> set[int]:
    # writer ids end in "-<pid>-<8 hex>": which processes wrote the table's rows
    return {int(r["w"].rsplit("-", 2)[-2]) for r in store.query(f'SELECT DISTINCT _writer AS w FROM "{table}__segments"')}


def test_a_build_on_two_dask_workers_accepts_the_same_tasks_as_threads(
        prefect_api: str, prepared: Path, tmp_path: Path, dask_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, client = dask_cluster
    # the same command twice (the output folder is part of a build's identity): on threads,
    # then, with that build moved aside, on the cluster
    out, threads_out, dask_out = tmp_path / "bench", tmp_path / "threads", tmp_path / "bench"
    copy_store(prepared, out / "store")
    on_threads = _build(out, "threads")
    out.rename(threads_out)
    copy_store(prepared, out / "store")
    monkeypatch.setenv("FACTORY_DASK__ADDRESS", cluster.scheduler_address)  # join the running cluster
    on_dask = _build(out, "dask")

    assert on_threads["run_id"] == on_dask["run_id"]  # the same command: the same run and random streams
    assert on_threads["stopped_by"] == on_dask["stopped_by"] == "max_attempts"
    threads_store, dask_store = Store(threads_out / "store"), Store(dask_out / "store")
    threads_candidates, threads_tasks = run_outcomes(threads_store, on_threads["run_id"])
    dask_candidates, dask_tasks = run_outcomes(dask_store, on_dask["run_id"])
    assert len(threads_candidates) == 10 and len(threads_tasks) >= 2
    assert dask_tasks == threads_tasks  # the same accepted tasks, field by field
    assert dask_candidates == threads_candidates  # and the same draws and rejections, for the same reasons
    # `factory generate` with the same seed runs the same loop in one process: the same again
    generated = copy_store(prepared, tmp_path / "generate")
    summary = factory_generate(generated, seed=5, n=50, max_attempts=10, concurrency=2)
    assert run_outcomes(generated, summary["run_id"]) == (threads_candidates, threads_tasks)
    # (token counts may differ: each worker process has its own LLM cache, so repeated prompts are
    # answered from cache less often than in one process)
    exported = [json.loads(line) for line in (dask_out / "tasks.jsonl").read_text().splitlines()]
    assert [(t["question"], t["support_chunk_ids"]) for t in exported] == \
        [(t["question"], t["support_chunk_ids"]) for t in threads_tasks]

    # the Dask build really ran on both workers, each writing its own segments to the one store
    worker_pids = set(client.run(os.getpid).values())
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids
    assert _writer_pids(dask_store, "llm_calls") == worker_pids
    assert worker_pids <= _writer_pids(dask_store, "verdicts")
    assert _writer_pids(threads_store, "llm_calls") == {os.getpid()}
