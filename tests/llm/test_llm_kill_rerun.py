"""Acceptance: a batch killed with SIGKILL mid-flight and rerun repeats no recorded call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from factory.llm.fake_server import FakeOpenAIServer
from factory.store import Store

ROOT = Path(__file__).resolve().parents[2]
N = 20

BATCH = """
import sys
from factory.llm import Gateway, LLMRequest, make_llm
from factory.store import Store

store = Store(sys.argv[1])
gateway = Gateway(make_llm(f"openai:{sys.argv[2]}#fake-http?retries=0"), store, stage_default="batch", concurrency=4)
requests = [LLMRequest.chat(None, f"item {i}") for i in range(%d)]
answers = gateway.complete_many(requests, item_ids=[f"item {i}" for i in range(%d)])
assert all(a.ok for a in answers), [a.error for a in answers if not a.ok]
print("done", gateway.stats.total.calls, gateway.stats.total.cache_hits)
""" % (N, N)


def _answer(body: dict) -> str:
    # calls finish at staggered times, so a kill lands while others are mid-call; slow enough
    # that a loaded machine's polling (this test) still catches the batch half way
    item = int(body["messages"][-1]["content"].split()[-1])
    time.sleep(0.6 + 0.2 * (item % 4))
    return f"answer to item {item}"


def _recorded(store: Store) -> set[str]:
    return {r["item_id"] for r in store.query("SELECT item_id FROM llm_calls WHERE ok")}


def _segments(store: Store) -> int:
    return sum(1 for p in store.table_dir("llm_calls").glob("*.parquet") if not p.name.startswith("_schema"))


def _run(store_path: Path, url: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", BATCH, str(store_path), url],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_sigkill_mid_batch_then_rerun_repeats_no_recorded_call(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    store = Store(store_path)
    with FakeOpenAIServer(answer=_answer) as server:
        proc = _run(store_path, server.url)
        deadline = time.monotonic() + 120
        while _segments(store) < 6:
            assert proc.poll() is None, f"the batch ended before the kill: {proc.communicate()}"
            assert time.monotonic() < deadline, "no calls recorded in time"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        received_first = {entry["last_user"] for entry in server.log}
        cut = len(server.log)

        recorded = _recorded(store)
        in_flight = received_first - recorded
        assert 6 <= len(recorded) < N
        assert in_flight, "the kill must land while calls are in flight"
        print(f"killed with {len(recorded)} recorded, {len(in_flight)} in flight")

        rerun = _run(store_path, server.url)
        out, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        asked_again = [entry["last_user"] for entry in server.log[cut:]]

    all_items = {f"item {i}" for i in range(N)}
    assert not set(asked_again) & recorded, "a recorded call was repeated"
    assert sorted(asked_again) == sorted(all_items - recorded)  # each missing call once, nothing else
    assert _recorded(store) == all_items
    # the rerun's own count: the recorded calls were served from the store
    assert out.split() == ["done", str(N - len(recorded)), str(len(recorded))]
    # calls that were in flight at the kill (and only those, plus unstarted ones) ran twice
    assert set(asked_again) >= in_flight
