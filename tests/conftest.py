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
