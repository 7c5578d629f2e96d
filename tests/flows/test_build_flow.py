"""`factory build-benchmark` end to end on a fixture corpus with distractors (``mixed_corpus``) with the `fake:factory` model.

All tests share one Prefect test server (conftest). One build runs in process and is
rerun (resume with nothing left to do); another runs in a subprocess that a second
process (this test) reads while it works, then kills with SIGKILL mid-run; the rerun
must keep every accepted task, duplicate none and repeat no recorded LLM call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factory.store import Store

BUILD_TIMEOUT_S = 600


def _args(out: Path, corpus: Path, lang: str, n: int, llm: str, concurrency: int) -> list[str]:
    return [
        "build-benchmark", "--lang", lang, "--corpus", str(corpus), "--n", str(n),
        "--llm", llm, "--out", str(out), "--concurrency", str(concurrency), "--no-live",
    ]


def _result_line(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith("{") and '"run_id"' in line]
    assert lines, output[-3000:]
    return json.loads(lines[-1])


def _tasks(store: Store) -> dict[str, tuple]:
    rows = store.query("SELECT task_id, question, answer, support_chunk_ids FROM tasks ORDER BY task_id")
    return {r["task_id"]: (r["question"], r["answer"], tuple(r["support_chunk_ids"])) for r in rows}


def _repeated_calls(store: Store) -> list[dict]:
    """Requests that reached a backend twice although the first answer was recorded."""
    return store.query(
        "SELECT request_key, count(*) AS n FROM llm_calls WHERE error IS NULL GROUP BY request_key HAVING count(*) > 1"
    )


def test_build_in_process_then_rerun_resumes(prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             mixed_corpus) -> None:
    from typer.testing import CliRunner

    from factory.cli import app
    from factory.evaluate import evaluate, load_benchmark, open_benchmark_index

    monkeypatch.setenv("FACTORY_BUILD__DENSE", "none")
    out = tmp_path / "bench-en"
    runner = CliRunner()
    first = runner.invoke(app, _args(out, mixed_corpus("en"), "en", 2, "fake:factory", 3))
    assert first.exit_code == 0, first.output[-3000:]
    result = _result_line(first.output)
    assert result["accepted"] >= 1, result
    for name in ("tasks.jsonl", "tasks.parquet", "corpus.jsonl", "chunks.parquet", "queries.jsonl", "qrels/test.tsv",
                 "qrels.trec", "index/manifest.json", "settings.json", "card.md", "card.html", "LICENSE",
                 "plots/funnel.png", "plots/coverage.png", "build.json"):
        assert (out / name).exists(), name
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == result["accepted"] == min(2, result["accepted_total"])
    store = Store(out / "store")
    runs = store.query("SELECT command FROM runs WHERE run_id = ?", [result["run_id"]])
    assert runs == [{"command": "build-benchmark"}]

    bench = load_benchmark(out)  # what `factory eval --benchmark OUT --retriever bm25` does
    report = evaluate(bench, "bm25", index=open_benchmark_index(bench))
    assert report.queries == len(tasks) and 0.0 <= report.recall <= 1.0

    again = runner.invoke(app, _args(out, mixed_corpus("en"), "en", 2, "fake:factory", 3))
    assert again.exit_code == 0, again.output[-3000:]
    rerun = _result_line(again.output)
    assert rerun["run_id"] == result["run_id"]
    assert rerun["candidates_started"] == 0 if result["accepted_total"] >= 2 else rerun["candidates_resumed"] > 0
    assert [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()] == tasks
    assert not _repeated_calls(store)


@pytest.fixture(scope="module")
def killed_build(prefect_api: str, tmp_path_factory: pytest.TempPathFactory, mixed_corpus) -> dict:
    """A build in its own process group, read from here while it runs, then SIGKILLed."""
    root = tmp_path_factory.mktemp("killed_build")
    out = root / "bench-ru"
    env = dict(os.environ, PREFECT_API_URL=prefect_api, PREFECT_HOME=str(root / "prefect_home"),
               PREFECT_LOGGING_LEVEL="WARNING", FACTORY_BUILD__DENSE="none")
    # a slow fake keeps candidates in flight long enough to be caught by the kill
    command = [sys.executable, "-m", "factory.cli", *_args(out, mixed_corpus("ru"), "ru", 4, "fake:factory?delay=0.4", 3), "--max-attempts", "30"]
    log = open(root / "build.log", "w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    seen: dict = {"out": out, "command": command, "env": env, "log": root / "build.log"}
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
            if not (out / "store" / "tables").exists():
                continue
            store = Store(out / "store")
            rejected = store.scalar("SELECT count(*) FROM rejected_tasks")
            if rejected and "rejected_while_running" not in seen:
                sample = store.query("SELECT candidate_id, validator, reason, feedback FROM rejected_tasks LIMIT 3")
                seen["rejected_while_running"] = (rejected, sample, process.poll() is None)
            accepted = store.scalar("SELECT count(*) FROM tasks")
            # in flight with a recorded LLM call: the rerun must serve that call from the cache
            in_flight = store.scalar(
                "SELECT count(*) FROM candidates c WHERE c.status = 'started' AND EXISTS "
                "(SELECT 1 FROM llm_calls l WHERE starts_with(l.item_id, c.candidate_id))")
            if accepted >= 2 and in_flight and "rejected_while_running" in seen:
                os.killpg(process.pid, signal.SIGKILL)  # the whole group: the flow and its worker threads
                process.wait(timeout=30)
                seen["killed"] = True
                break
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        log.close()
    store = Store(out / "store")
    seen["tasks_before"] = _tasks(store)
    seen["in_flight_at_kill"] = store.scalar("SELECT count(*) FROM candidates WHERE status = 'started'")
    seen["calls_before"] = store.scalar("SELECT count(*) FROM llm_calls")
    return seen


def test_rejects_readable_from_another_process_during_a_build(killed_build: dict) -> None:
    assert "rejected_while_running" in killed_build, killed_build["log"].read_text()[-3000:]
    count, sample, build_alive = killed_build["rejected_while_running"]
    assert count >= 1 and build_alive
    assert all(row["reason"] for row in sample)


def test_sigkill_mid_run_then_rerun_loses_and_repeats_nothing(killed_build: dict) -> None:
    assert killed_build.get("killed"), killed_build["log"].read_text()[-3000:]
    before = killed_build["tasks_before"]
    assert len(before) >= 2 and killed_build["in_flight_at_kill"] >= 1
    done = subprocess.run(killed_build["command"], env=killed_build["env"], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S, start_new_session=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    result = _result_line(done.stdout)
    store = Store(killed_build["out"] / "store")
    after = _tasks(store)
    assert all(after.get(task_id) == task for task_id, task in before.items())  # nothing lost or changed
    # no task accepted twice under another id (a resumed candidate redoing a finished one would)
    twice = store.query("SELECT question, count(*) AS n FROM tasks GROUP BY question HAVING count(*) > 1")
    assert twice == []
    exported = [json.loads(line)["task_id"] for line in (killed_build["out"] / "tasks.jsonl").read_text().splitlines()]
    assert len(exported) == len(set(exported)) and set(before) <= set(exported) | set(after)
    assert not _repeated_calls(store)  # no recorded call reached the backend again
    assert result["candidates_resumed"] >= 1
    assert result["cached_calls"] >= 1  # the candidates caught mid-flight re-asked recorded calls: served from cache
