"""Shared by the training-data tests: a prepared store, a run without Prefect, checks on a set."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from factory.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS_EN = FIXTURES / "corpus_en.jsonl"


# environment of every training test run (in process and in subprocesses): BM25 only, and the
# broad-query check at k=1 so that the fake model's drafts on 20 articles pass often enough
TEST_ENV = {"FACTORY_BUILD__DENSE": "none", "FACTORY_VALIDATION__SHORTCUT_K": "1", "FACTORY_LLM__THREADS": "1"}


@pytest.fixture()
def relaxed_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in TEST_ENV.items():
        monkeypatch.setenv(key, value)


def prepare_store(path: Path) -> Path:
    """The English fixture corpus ingested and indexed (BM25 only) where a flow keeps them."""
    from factory.index.fixed import build_index
    from factory.ingest import ingest
    from factory.settings import load_settings

    settings = load_settings(**{"build.dense": "none"})
    store = Store(path)
    ingest(CORPUS_EN, store, "en", settings)
    build_index(store, path / "index-en", "en", settings, dense=None, progress=False)
    return path


def copy_store(prepared: Path, to: Path) -> Path:
    shutil.copytree(prepared, to)
    return to


def run_training(store: Path, *, training_set: str, run_id: str | None = None, seed: int = 3,
                 max_attempts: int = 6, concurrency: int = 2, stream: int | None = None,
                 llm: str = "fake:factory") -> tuple[Any, Any]:
    """One training run on a thread pool, without Prefect (what the flow's generation step does).

    ``stream``: force the run's stream seed (two runs with the same one compose the same tasks).
    """
    from factory.store.runs import record_run
    from factory.ordered import run_in_order
    from factory.training_set import TRAINING_COMMAND
    from factory.worker import close_contexts, run_job
    from flows.generate_training_data import resolve_training_run
    from flows.generation import start_generation

    run = resolve_training_run(str(CORPUS_EN), "en", str(store), llm, training_set, max_attempts,
                               seed=seed, concurrency=concurrency, run_id=run_id)
    if stream is not None:
        run.seed = stream
    record_run(Store(store), run.run_id, TRAINING_COMMAND, run.settings)
    driver, worker, state = start_generation(run)
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            report = run_in_order(lambda job: pool.submit(run_job, job, worker), driver, run.budget, state)
    finally:
        driver.close()
        close_contexts(run.run_id)
    return report, run


def set_tasks(store: Path | Store, training_set: str) -> list[dict[str, Any]]:
    from factory.training_set import TaskScope

    db = store if isinstance(store, Store) else Store(store)
    return TaskScope(run_id="", lang="en", training_set=training_set).accepted(db)


def assert_no_duplicates(tasks: list[dict[str, Any]]) -> None:
    ids = [t["task_id"] for t in tasks]
    supports = [tuple(sorted(t["support_chunk_ids"])) for t in tasks]
    questions = [t["question"] for t in tasks]
    assert len(ids) == len(set(ids)), ids
    assert len(supports) == len(set(supports)), supports
    assert len(questions) == len(set(questions)), questions


def assert_rows_complete(store: Path | Store, run_id: str, started: int) -> None:
    """Every candidate the run started ended in one final row; every accepted one has its task."""
    db = store if isinstance(store, Store) else Store(store)
    status = {r["status"]: r["n"] for r in db.query(
        "SELECT status, count(*) AS n FROM candidates WHERE run_id = ? GROUP BY status", [run_id])}
    assert status.get("started", 0) == 0, status
    assert status.get("accepted", 0) + status.get("rejected", 0) == started, (status, started)
    accepted = {r["candidate_id"] for r in db.query(
        "SELECT candidate_id FROM candidates WHERE run_id = ? AND status = 'accepted'", [run_id])}
    tasks = {r["task_id"] for r in db.query("SELECT task_id FROM tasks WHERE run_id = ?", [run_id])}
    assert accepted == tasks
