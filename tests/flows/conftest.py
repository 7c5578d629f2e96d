"""One Prefect test server for every flow test (starting one costs 30-60 s here).

Builds started in a subprocess get its URL (``PREFECT_API_URL``), so they do not
start an ephemeral server of their own; killing such a build leaves the server up.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> str:
    patch = pytest.MonkeyPatch()
    patch.setenv("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect_session_home")))
    patch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    try:
        with prefect_test_harness(server_startup_timeout=180):
            url = PREFECT_API_URL.value()
            assert url and url.startswith("http://127.0.0.1"), url
            yield url
    finally:
        patch.undo()


@pytest.fixture()
def build_env(prefect_api: str, tmp_path: Path) -> dict[str, str]:
    """Environment for a `factory build-benchmark` subprocess talking to the test server."""
    env = dict(os.environ)
    env.update({
        "PREFECT_API_URL": prefect_api,
        "PREFECT_HOME": str(tmp_path / "prefect_home_subprocess"),
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "FACTORY_BUILD__DENSE": "none",  # BM25 only: no encoder to load in every subprocess
        "FACTORY_LLM__THREADS": "1",
    })
    return env
