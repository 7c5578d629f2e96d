"""Test-wide guarantees: no network but loopback, offline hubs, a fresh store per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factory.offline import OFFLINE_ENV

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

for _key, _value in OFFLINE_ENV.items():
    os.environ[_key] = _value


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("prefect_home")
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    monkeypatch.delenv("FACTORY_CONFIG", raising=False)


@pytest.fixture()
def store(tmp_path: Path):
    from factory.store import Store

    return Store(tmp_path / "store")


@pytest.fixture(scope="session")
def shared_corpora() -> Path:
    path = SHARED / "corpora"
    if not path.exists():
        pytest.fail(f"{path} is missing: the shared corpora are part of the test environment")
    return path


MIXED_DISTRACTORS = 200  # enough that a top-10 search means something; NER on them takes seconds


@pytest.fixture(scope="session")
def mixed_corpus(tmp_path_factory: pytest.TempPathFactory, shared_corpora: Path):
    """``mixed_corpus(lang)``: the fixture articles plus the first documents of a shared corpus.

    On the ~20-article fixture alone a top-10 search returns half the corpus, so no grounded
    question can pass the broad-query shortcut check; end-to-end tests that need accepted
    tasks build on this corpus instead (validators are never relaxed to make them pass).
    """
    import json

    made: dict[str, Path] = {}
    sources = {"en": shared_corpora / "en-wiki-vital" / "docs.jsonl", "ru": shared_corpora / "ru-wikinews" / "docs.jsonl"}

    def make(lang: str, distractors: int = MIXED_DISTRACTORS) -> Path:
        key = f"{lang}-{distractors}"
        if key not in made:
            path = tmp_path_factory.mktemp("mixed_corpus") / f"corpus_{key}.jsonl"
            lines = (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines()
            with sources[lang].open(encoding="utf-8") as source:
                for _, line in zip(range(distractors), source):
                    record = json.loads(line)
                    lines.append(json.dumps({"id": record["id"], "title": record.get("title", ""),
                                             "text": record["text"]}, ensure_ascii=False))
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            made[key] = path
        return made[key]

    return make


def _guarded_probe(command: list[str] | None = None):
    """The ~1,000-token probe of the embedded model in a child process (``command``: another
    child to run instead). A death by a signal fails the test with the reason and the build
    flags instead of killing the test run; otherwise the probe's result."""
    pytest.importorskip("llama_cpp")
    from factory.llm.probe import ProbeCrashed, run_probe

    try:
        result = run_probe("llamacpp:smollm2-135m", threads=1, command=command)
    except ProbeCrashed as exc:
        crashed = str(exc)
    else:
        crashed = ""
    if crashed:  # outside the except block: the message once, without the chained exception
        pytest.fail(crashed, pytrace=False)
    return result


@pytest.fixture(scope="session")
def guarded_probe():
    return _guarded_probe


@pytest.fixture(scope="session")
def embedded_runtime() -> None:
    """Before any test loads the embedded model in this process: the probe in a child process,
    so a runtime that dies by a signal (a native llama.cpp build's AMX kernels) fails those
    tests with the reason and the build flags instead of killing the run."""
    _guarded_probe()
