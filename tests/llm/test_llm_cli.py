"""`factory llm check` through the real Typer app."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from factory.cli import app


def test_llm_check_with_the_fake_backend() -> None:
    result = CliRunner().invoke(app, ["llm", "check", "--llm", "fake"])
    assert result.exit_code == 0, result.output
    assert "backend   fake" in result.output
    assert '{"city": "fake city", "country": "fake country"}' in result.output
    assert "tokens/s" in result.output
    assert "-token prompt answered" in result.output  # the long probe ran (in a child process)


def test_llm_check_reports_an_unreachable_server_as_an_error() -> None:
    result = CliRunner().invoke(app, ["llm", "check", "--llm", "openai:http://127.0.0.1:9/v1#m?retries=0&timeout=1"])
    assert result.exit_code != 0
    assert "APIConnectionError" in str(result.exception)


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_runtime")
def test_llm_check_with_the_embedded_model() -> None:
    pytest.importorskip("llama_cpp")
    result = CliRunner().invoke(app, ["llm", "check", "--llm", "llamacpp:smollm2-135m", "--threads", "1",
                                      "--max-tokens", "24"])
    assert result.exit_code == 0, result.output
    assert "context   8192 tokens" in result.output
    assert "English only" in result.output
    assert '"city": "Paris"' in result.output
    assert "cpu build" in result.output and "AMX" not in result.output
    long = next(line for line in result.output.splitlines() if line.startswith("long"))
    assert int(long.split("a ", 1)[1].split("-token")[0]) >= 600, long
