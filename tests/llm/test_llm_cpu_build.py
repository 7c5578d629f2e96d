"""The embedded runtime's CPU build: parsed, refused when it would crash, probed in a child."""

from __future__ import annotations

import json
import os
import sys

import pytest

from factory.llm.cpu_build import NativeBuildError, features, main, offending, refuse_crashing_build
from factory.llm.probe import ProbeCrashed, long_prompt, run_probe

PORTABLE = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "
NATIVE_AMX = PORTABLE + "AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | OPENMP = 0 | "


def test_features_are_those_reported_as_one() -> None:
    assert features(PORTABLE) == ["SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "LLAMAFILE"]
    assert "OPENMP" not in features(NATIVE_AMX)
    assert offending(features(NATIVE_AMX), ("AMX", "AVX512")) == ["AVX512", "AVX512_VNNI", "AMX_INT8"]


def test_an_amx_build_is_refused_with_the_fix() -> None:
    with pytest.raises(NativeBuildError, match=r"AMX_INT8.*GGML_NATIVE=OFF"):
        refuse_crashing_build(NATIVE_AMX)
    assert "AVX2" in refuse_crashing_build(PORTABLE)


def test_the_probe_prompt_is_about_a_thousand_tokens() -> None:
    words = len(long_prompt().split())
    assert 600 <= words <= 1000  # ~1.3-1.6 tokens a word with the small models' tokenizers


def test_a_child_killed_by_a_signal_is_one_clear_error() -> None:
    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    with pytest.raises(ProbeCrashed, match=r"died by SIGSEGV.*built with: .*GGML_NATIVE=OFF"):
        run_probe("llamacpp:smollm2-135m", command=crash)


def test_a_child_that_fails_without_a_signal_says_so() -> None:
    with pytest.raises(ProbeCrashed, match=r"exit 3"):
        run_probe("fake", command=[sys.executable, "-c", "import sys; sys.exit(3)"])


def test_the_probe_through_the_fake_backend() -> None:
    result = run_probe("fake")
    assert result.error is None and result.tokens_in > 600


@pytest.mark.slow
def test_the_embedded_runtime_survives_a_long_prompt_in_a_child_process(guarded_probe) -> None:
    """The guard: a build that segfaults on real prompts fails here, with its build flags named,
    instead of killing the test run (the prompt runs in a child process)."""
    # FACTORY_GUARD_PROBE_COMMAND (a JSON argv) points the guard at another child, to see it fail
    result = guarded_probe(json.loads(os.environ.get("FACTORY_GUARD_PROBE_COMMAND") or "null"))
    assert result.error is None, result.error
    assert result.tokens_in >= 600 and result.tokens_out >= 1


@pytest.mark.slow
def test_this_environment_has_a_portable_build(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    assert main(["--require-portable"]) == 0, capsys.readouterr().err
