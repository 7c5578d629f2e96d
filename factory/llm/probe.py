"""The long-prompt probe: one prompt of about a thousand tokens, run in a child process.

A short prompt proves little: a broken llama.cpp build (ggml's AMX kernels in a native
build) dies inside ``decode`` on real prompts, and it dies by a signal, taking the
caller with it. So the probe runs in its own process; a child killed by a signal
becomes a ``ProbeCrashed`` whose message names the signal and the runtime's build
flags, not a dead test run or CLI. ``factory llm check`` and the embedded-model guard
test both use it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Sequence

from factory.errors import FactoryError

_PLACES = ("Lake Varn", "the Ostry marsh", "Cape Idel", "the Brena delta", "Harrow Fen")
_BIRDS = ("herons", "grebes", "plovers", "terns", "curlews")


def long_prompt(notes: int = 24) -> str:
    """Deterministic field notes and a question over all of them: about 1,000 tokens at 24 notes."""
    lines = [
        f"Note {i}: the survey team counted {(i * 37) % 400 + 12} {_BIRDS[i % 5]} at {_PLACES[(i * 3) % 5]} "
        f"in the spring of {1960 + i}; the warden checked the tally twice before filing it."
        for i in range(1, notes + 1)
    ]
    return ("Read the field notes and answer the question at the end.\n\n" + "\n".join(lines)
            + "\n\nQuestion: which note records the largest count? Answer with the note number only.")


@dataclass
class ProbeResult:
    tokens_in: int
    tokens_out: int
    latency_s: float
    text: str
    error: str | None = None


class ProbeCrashed(FactoryError):
    pass


def _build_flags() -> str:
    try:
        from factory.llm.cpu_build import features

        return " ".join(features()) or "(none reported)"
    except Exception as exc:  # the flags are for the message only
        return f"(unknown: {type(exc).__name__})"


def run_probe(spec: str, *, threads: int = 0, max_tokens: int = 16, timeout_s: float = 600,
              command: Sequence[str] | None = None) -> ProbeResult:
    """Run the probe for ``spec`` in a child process (``command`` replaces the child, for tests)."""
    argv = list(command) if command else [sys.executable, "-m", "factory.llm.probe", "--llm", spec,
                                          "--threads", str(threads), "--max-tokens", str(max_tokens)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())
    except subprocess.TimeoutExpired as exc:
        raise ProbeCrashed(f"{spec}: the long-prompt probe did not finish in {timeout_s:.0f} s") from exc
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise ProbeCrashed(
            f"{spec}: the process running a ~1,000-token prompt died by {name}. Its llama.cpp runtime was built "
            f"with: {_build_flags()}. A build for its build machine's own CPU (AMX kernels) crashes this way; "
            f"rebuild it portably: bash scripts/install.sh (CMAKE_ARGS='-DGGML_NATIVE=OFF ...'). "
            f"Last output: {(done.stderr or done.stdout).strip()[-300:]!r}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise ProbeCrashed(f"{spec}: the long-prompt probe failed (exit {done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[-300:]}")
    return ProbeResult(**json.loads(lines[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one ~1,000-token prompt through a backend (child side)")
    parser.add_argument("--llm", required=True)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args(argv)
    import faulthandler

    faulthandler.enable()  # a crash in native code prints where it happened before the signal kills us
    from factory.llm import LLMRequest, Sampling, make_llm
    from factory.settings import LLMSettings

    backend = make_llm(args.llm, LLMSettings(threads=args.threads))
    response = backend.complete(LLMRequest.chat(None, long_prompt(), sampling=Sampling(max_tokens=args.max_tokens)))
    print(json.dumps({"tokens_in": response.tokens_in, "tokens_out": response.tokens_out,
                      "latency_s": round(response.latency_s, 3), "text": response.text[:200],
                      "error": response.error}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
