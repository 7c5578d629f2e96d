"""The build's plan without Prefect: settings, profiles, run identity, bad flags."""

from __future__ import annotations

from pathlib import Path

from factory.params import BuildParams
from flows.build_benchmark import resolve_build, run_id_for

# the candidate loop itself (targets, budgets, concurrency, resume) is tested in test_ordered_loop.py


def _plan(tmp_path: Path, **kw):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n')
    return resolve_build(BuildParams(lang="en", corpus=str(corpus), n=kw.pop("n", 4), llm_spec="fake",
                                     out=str(tmp_path / "out"), **kw))


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
    assert capped.limits.concurrency == 7
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
