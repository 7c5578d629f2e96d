"""The flow's candidate loop without Prefect: targets, budgets, concurrency, resume."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.build_benchmark import RunState, resolve_build, run_candidates, run_id_for


class Outcome:
    def __init__(self, status: str, tokens: int) -> None:
        self.status, self.tokens = status, tokens


def _plan(tmp_path: Path, **kw):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n')
    return resolve_build("en", corpus, kw.pop("n", 4), "fake", tmp_path / "out", **kw)


def _runner(accept_every: int = 3, tokens: int = 10, delay: float = 0.01):
    pool = ThreadPoolExecutor(max_workers=8)
    lock = threading.Lock()
    live = {"now": 0, "peak": 0, "seen": []}

    def work(idx: int) -> Outcome:
        with lock:
            live["now"] += 1
            live["peak"] = max(live["peak"], live["now"])
            live["seen"].append(idx)
        time.sleep(delay * (1 + idx % 3))  # finish out of order
        with lock:
            live["now"] -= 1
        if idx == 5:
            raise RuntimeError("a bug in candidate 5")
        return Outcome("accepted" if idx % accept_every == 0 else "rejected", tokens)

    return (lambda idx: pool.submit(work, idx)), live


def test_stops_at_the_target_with_bounded_concurrency(tmp_path: Path) -> None:
    plan = _plan(tmp_path, n=4, concurrency=3, max_attempts=100)
    submit, live = _runner()
    report = run_candidates(submit, RunState(done=set(), accepted=0, tokens=0), plan)
    assert report.stopped_by == "target"
    assert report.accepted >= 4 and live["peak"] <= 3
    assert report.failed == 1 and "candidate 5" in report.errors[0]
    # no index twice, none skipped below the highest started
    assert sorted(live["seen"]) == list(range(len(live["seen"])))
    assert report.started == len(live["seen"])


def test_budgets_and_resume(tmp_path: Path) -> None:
    plan = _plan(tmp_path, n=50, concurrency=2, max_attempts=6)
    submit, live = _runner(accept_every=100)
    # candidates 0, 1 and 3 finished in an earlier try: only the others run, within the budget
    report = run_candidates(submit, RunState(done={0, 1, 3}, accepted=1, tokens=0), plan)
    assert report.stopped_by == "max_attempts"
    assert sorted(live["seen"]) == [2, 4, 5]
    assert report.accepted == 1 and report.resumed_done == 3

    plan = _plan(tmp_path, n=50, concurrency=2, token_budget=35, max_attempts=100)
    submit, live = _runner(accept_every=100, tokens=10)
    report = run_candidates(submit, RunState(done=set(), accepted=0, tokens=5), plan)
    assert report.stopped_by == "token_budget"
    assert report.tokens >= 35 and len(live["seen"]) <= 5  # 5 + 3*10 reaches 35; at most 2 more in flight


def test_settings_profile_and_run_identity(tmp_path: Path) -> None:
    demo = _plan(tmp_path, profile="demo")
    assert demo.settings.agent.max_rounds == 2 and demo.settings.agent.difficulty_rollouts == 1
    full = _plan(tmp_path, profile="full")
    assert full.settings.validation == demo.settings.validation  # the demo never relaxes a validator
    assert demo.run_id != full.run_id
    again = _plan(tmp_path, profile="demo")
    assert again.run_id == demo.run_id and again.store_path == tmp_path / "out" / "store"
    # flags beat the profile
    capped = _plan(tmp_path, profile="demo", concurrency=7)
    assert capped.concurrency == 7
    url_a = run_id_for("en", tmp_path, "openai:http://a:8000/v1#m", 1, tmp_path, "full")
    url_b = run_id_for("en", tmp_path, "openai:http://b:9000/v1#m", 1, tmp_path, "full")
    assert url_a == url_b  # the endpoint may move between tries; the model may not
    assert url_a != run_id_for("en", tmp_path, "openai:http://a:8000/v1#other", 1, tmp_path, "full")


def test_bad_flags_fail_before_prefect_starts(tmp_path: Path) -> None:
    import subprocess
    import sys

    base = [sys.executable, "-m", "factory.cli", "build-benchmark", "--n", "2", "--llm", "fake:factory",
            "--out", str(tmp_path / "out")]
    bad_lang = subprocess.run([*base, "--lang", "de", "--corpus", str(tmp_path)], capture_output=True, text=True,
                              timeout=300)
    assert bad_lang.returncode == 1 and "--lang must be en or ru" in bad_lang.stderr
    missing = subprocess.run([*base, "--lang", "en", "--corpus", str(tmp_path / "nope.jsonl")], capture_output=True,
                             text=True, timeout=300)
    assert missing.returncode == 1 and "nope.jsonl: corpus not found" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    assert not (tmp_path / "out").exists()
