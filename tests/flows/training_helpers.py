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
    from factory.generate import TRAINING_COMMAND, close_contexts, run_in_order, run_job, start_run
    from factory.params import TrainingRunParams
    from flows.generate_training_data import resolve_training_run

    run = resolve_training_run(TrainingRunParams(
        corpus=str(CORPUS_EN), lang="en", store=str(store), llm_spec=llm, training_set=training_set,
        max_attempts=max_attempts, seed=seed, concurrency=concurrency, run_id=run_id))
    if stream is not None:
        run.seed = stream
    record_run(Store(store), run.run_id, TRAINING_COMMAND, run.settings)
    driver, worker, state = start_run(run)
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            report = run_in_order(lambda job: pool.submit(run_job, job, worker), driver, run.limits, state)
    finally:
        driver.close()
        close_contexts(run.run_id)
    return report, run


def set_tasks(store: Path | Store, training_set: str) -> list[dict[str, Any]]:
    from factory.generate import TaskScope

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


def run_outcomes(store: Path | Store, run_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run's candidates (draws and how each ended) and its tasks, in candidate order, without ids
    or timings: what must be the same whatever ran the run."""
    import json

    db = store if isinstance(store, Store) else Store(store)
    candidates = db.query("SELECT idx, cell, status, stage, validator, reason, subgraph FROM candidates "
                          "WHERE run_id = ? ORDER BY idx", [run_id])
    for row in candidates:  # the selected subgraph, without its timing figures
        subgraph = json.loads(row.pop("subgraph") or "{}")
        row["subgraph"] = {k: v for k, v in subgraph.items() if k != "figures"}
    tasks = db.query("SELECT c.idx, t.cell, t.question, t.answer, t.support_chunk_ids, t.answer_chunk_id "
                     "FROM tasks t JOIN candidates c ON c.candidate_id = t.candidate_id WHERE t.run_id = ? "
                     "ORDER BY c.idx", [run_id])
    return candidates, tasks


def factory_generate(store: Path, *, seed: int, n: int, max_attempts: int, concurrency: int,
                     llm: str = "fake:factory") -> dict[str, Any]:
    """`factory generate` on a prepared store, in this process; its JSON summary."""
    import json

    from typer.testing import CliRunner

    from factory.cli import app

    result = CliRunner().invoke(app, [
        "generate", "--store", str(store), "--index", str(store / "index-en"), "--llm", llm, "--n", str(n),
        "--max-attempts", str(max_attempts), "--seed", str(seed), "--concurrency", str(concurrency), "--json"])
    assert result.exit_code == 0, result.output[-3000:]
    return json.loads(result.output.strip().splitlines()[-1])
