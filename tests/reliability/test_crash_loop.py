"""Crash loop: `factory generate` SIGKILLed (its whole process group) at ten seeded random
moments and rerun each time ends with exactly what one uninterrupted run produces.

Both runs use the same seed, one candidate in flight (with more, which candidates are in
flight when the target is reached, and so finish after it, is a matter of timing) and
``durablefake``: the rule-based ``fake:factory`` with its memory of composed
questions on disk, since a real model keeps no memory across processes either.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from factory.store import Store

from reliability_kit import accepted_tasks, launcher, repeated_successful_calls, segment_files

SEED = 3
N = 6  # enough work that each of the ten kills lands while the run still works
KILLS = 10
KILL_SEED = 20240613
# each call takes this long, as a model's would: without it a try did several candidates in the
# 0.05-0.4 s before its kill, and a late try could finish the run before its kill (seen in CI)
CALL_DELAY_S = 0.03
RUN_TIMEOUT_S = 300


def _command(store: Path, index: Path, memory: Path) -> list[str]:
    return launcher("generate", "--store", str(store), "--index", str(index),
                    "--llm", f"durablefake:{memory}?delay={CALL_DELAY_S}",
                    "--n", str(N), "--seed", str(SEED), "--concurrency", "1", "--json")


def _summary(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, stdout[-2000:]
    return json.loads(lines[-1])


def _trajectory(store: Store) -> list[tuple]:
    return [tuple(r.values()) for r in store.query(
        "SELECT idx, cell, status, stage, validator, reason, task_id FROM candidates ORDER BY idx")]


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as handle:  # the child keeps its own descriptor
        return subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
def test_ten_sigkills_then_rerun_give_the_uninterrupted_result(world_copy, tmp_path: Path) -> None:
    store_path, index = world_copy
    # the run writes its call rows together (llm.record_every_s): a window shorter than the kill
    # slices below lets every try leave work behind, and kills still land on unwritten calls
    env = dict(os.environ, FACTORY_LLM__CONCURRENCY="4", FACTORY_LLM__RECORD_EVERY_S="0.1")

    # the reference: one uninterrupted run
    straight = tmp_path / "straight"
    shutil.copytree(store_path, straight)
    started = time.monotonic()
    done = subprocess.run(_command(straight, index, tmp_path / "straight.jsonl"), env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    reference = _summary(done.stdout)
    straight_s = time.monotonic() - started
    assert reference["accepted"] >= 1, reference  # nothing to compare otherwise

    # the crash loop: kill at a random moment after the run has started calling the model
    rng = random.Random(KILL_SEED)
    command = _command(store_path, index, tmp_path / "crashed.jsonl")
    log = tmp_path / "crashed.log"
    kills: list[dict] = []
    crash_started = time.monotonic()
    for k in range(KILLS):
        before = segment_files(store_path, "llm_calls")
        process = _start(command, env, log)
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while segment_files(store_path, "llm_calls") == before and process.poll() is None:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.01)
            # a short slice of new work per try, so all ten kills land before the run is done
            delay = rng.uniform(0.05, min(0.4, max(0.1, reference["elapsed_s"] / (2 * KILLS))))
            time.sleep(delay)
            assert process.poll() is None, f"run {k} ended before its kill: {log.read_text()[-3000:]}"
            os.killpg(process.pid, signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        store = Store(store_path)
        kills.append({"kill": k, "after_first_call_s": round(delay, 3),
                      "llm_calls": store.scalar("SELECT count(*) FROM llm_calls"),
                      "finished": store.scalar("SELECT count(*) FROM candidates WHERE status <> 'started'"),
                      "cut_short": store.scalar("SELECT count(*) FROM candidates WHERE status = 'started'"),
                      "tasks": store.scalar("SELECT count(*) FROM tasks")})
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert final.returncode == 0, (final.stdout + final.stderr)[-3000:]
    resumed = _summary(final.stdout)
    crash_s = time.monotonic() - crash_started

    crashed, reference_store = Store(store_path), Store(straight)
    for row in kills:
        print(json.dumps(row))
    print(json.dumps({"reference": {k: reference[k] for k in ("accepted", "candidates", "tokens", "elapsed_s")},
                      "final_rerun": {k: resumed[k] for k in ("earlier_accepted", "accepted", "candidates")},
                      "llm_calls": crashed.scalar("SELECT count(*) FROM llm_calls"),
                      "straight_s": round(straight_s, 1), "crash_loop_s": round(crash_s, 1)}))

    # the kills landed mid-run: state grew between them and some candidate was cut short
    assert len(kills) == KILLS
    assert any(row["cut_short"] for row in kills)
    assert kills[-1]["llm_calls"] > kills[0]["llm_calls"]
    # the same accepted set, and the same path there: every candidate drew the same cell and ended alike
    assert accepted_tasks(crashed) == accepted_tasks(reference_store)
    assert _trajectory(crashed) == _trajectory(reference_store)
    assert crashed.scalar("SELECT count(*) FROM candidates WHERE status = 'started'") == 0
    # no duplicate tasks: one question per task, and rewrites of a task id (a kill between its
    # rows) carry the same content
    assert crashed.query("SELECT question FROM tasks GROUP BY question HAVING count(*) > 1") == []
    assert crashed.query(
        "SELECT task_id FROM tasks__segments GROUP BY task_id "
        "HAVING count(DISTINCT (question, answer, support_chunk_ids::VARCHAR)) > 1") == []
    # no recorded call asked again, and none missing: the same requests, each recorded once
    assert repeated_successful_calls(crashed) == []
    keys = "SELECT request_key FROM llm_calls ORDER BY request_key"
    assert [r["request_key"] for r in crashed.query(keys)] == [r["request_key"] for r in reference_store.query(keys)]
