"""The generation loop's cost per candidate: the factory's own overhead against the model's time.

    .venv/bin/python -m bench.candidates --store DIR [--fake 10] [--embedded 3]

``--store``: an ingested store with entity statistics (``python -m bench.ingest --keep``
leaves one). A BM25 fixed index is built from it (no dense index: encoding thousands
of passages on this CPU takes longer than the bench), then ``run_generation`` runs
twice on it, side by side with the same settings (the demo profile's cheaper
difficulty checker, one candidate and one LLM call at a time, so that times add up):

* with ``fake:factory`` (the rule-based fake that answers every prompt of the
  factory, in microseconds): the time per candidate is the factory's own overhead
  (selection, fact sheets, prompts, parsing, validators, searches, the agent
  harness, the store and the LLM log), everything but a model;
* with ``llamacpp:smollm2-135m`` (the embedded model): the time inside the model per
  candidate, next to that overhead; accepted tasks per hour and tokens per accepted
  task (0 accepted is reported as it is: the validators are not relaxed for a small model).

Time inside the model is measured around the backend's ``complete``, under the gateway.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import emit, note, peak_rss_mb


class TimedBackend:
    """An LLM backend that adds up the time spent inside ``complete`` (thread-safe)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # name, model, context_tokens, supports_tools, ...
        return getattr(self.inner, name)

    def complete(self, request: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.complete(request)
        finally:
            with self._lock:
                self.seconds += time.perf_counter() - started
                self.calls += 1


def demo_settings(**extra: Any) -> Any:
    from factory.settings import Settings, load_settings

    overrides = Settings().build.overrides("demo")
    overrides.pop("build.max_attempts", None)
    return load_settings(**{**overrides, "llm.concurrency": 1, "generate.concurrency": 1, **extra})


def build_fixed_index(store_path: Path, out: Path, lang: str) -> Any:
    from factory.index.fixed import build_index, open_index
    from factory.store import Store

    store = Store(store_path, create=False)
    started = time.perf_counter()
    build_index(store, out, lang, dense=None, progress=False)
    emit({"bench": "candidates", "part": "index", "lang": lang, "build_s": round(time.perf_counter() - started, 2)})
    return open_index(out, store=store)


def run_candidates(store_path: Path, index: Any, spec: str, candidates: int, lang: str, seed: int = 7) -> dict[str, Any]:
    """``candidates`` candidates of the generation loop with the backend ``spec``; one figure.

    Runs on a copy of the store without its LLM log: an earlier run's cache (keyed by
    the request) would otherwise answer the same prompts without the model.
    """
    from factory.generate import run_generation
    from factory.llm.gateway import Gateway
    from factory.llm.registry import make_llm
    from factory.store import Store

    settings = demo_settings()
    copy = Path(tempfile.mkdtemp(prefix="bench-candidates-store-")) / "store"
    outcomes: list[Any] = []
    gateway = None
    try:
        shutil.copytree(store_path, copy)
        for segment in Store(copy, create=False).segments("llm_calls"):  # the schema segment stays
            segment.unlink()
        store = Store(copy, create=False)
        started = time.perf_counter()
        backend = TimedBackend(make_llm(spec, settings.llm))
        load_s = time.perf_counter() - started
        run_id = f"bench-{spec.replace(':', '-')}-{int(time.time())}"
        gateway = Gateway(backend, store, run_id=run_id, concurrency=1)
        summary = run_generation(store, index, gateway, settings, n=candidates, lang=lang, run_id=run_id, seed=seed,
                                 max_attempts=candidates, concurrency=1,
                                 progress=lambda outcome, _summary: outcomes.append(outcome))
    finally:
        if gateway is not None:
            gateway.close()
        shutil.rmtree(copy.parent, ignore_errors=True)
    n = max(1, len(outcomes))
    candidate_s = sum(o.elapsed_s for o in outcomes)
    hours = summary.elapsed_s / 3600
    return emit({
        "bench": "candidates", "llm": spec, "lang": lang, "candidates": len(outcomes), "accepted": summary.accepted,
        "rejected_by": summary.rejected_by, "revisions": summary.revisions, "model_load_s": round(load_s, 2),
        "run_s": round(summary.elapsed_s, 2), "setup_s": round(summary.elapsed_s - candidate_s, 2),
        "s_per_candidate": round(candidate_s / n, 3),
        "model_s_per_candidate": round(backend.seconds / n, 3),
        "overhead_s_per_candidate": round((candidate_s - backend.seconds) / n, 3),
        "model_calls_per_candidate": round(backend.calls / n, 1),
        "candidate_s_median": round(statistics.median(o.elapsed_s for o in outcomes), 3) if outcomes else None,
        "tokens": summary.tokens, "tokens_per_candidate": round(summary.tokens / n, 1),
        "accepted_per_hour": round(summary.accepted / hours, 2) if hours else 0.0,
        "tokens_per_accepted": round(summary.tokens / summary.accepted, 1) if summary.accepted else None,
        "peak_rss_mb": peak_rss_mb(),
    })


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a store with entity statistics")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--fake", type=int, default=10, help="candidates with fake:factory")
    parser.add_argument("--embedded", type=int, default=3, help="candidates with the embedded model (0: skip)")
    parser.add_argument("--llm", default="llamacpp:smollm2-135m", help="the real model")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-candidates-") as tmp:
        index = build_fixed_index(args.store, Path(tmp) / "index", args.lang)
        note(f"[candidates] {args.fake} candidates with fake:factory")
        fake = run_candidates(args.store, index, "fake:factory", args.fake, args.lang)
        real = None
        if args.embedded:
            note(f"[candidates] {args.embedded} candidates with {args.llm}")
            real = run_candidates(args.store, index, args.llm, args.embedded, args.lang)
    summary: dict[str, Any] = {"bench": "candidates", "part": "summary",
                               "fake_overhead_s_per_candidate": fake["overhead_s_per_candidate"]}
    if real is not None:
        overhead = fake["overhead_s_per_candidate"]
        summary |= {
            "llm": args.llm, "embedded_model_s_per_candidate": real["model_s_per_candidate"],
            "embedded_overhead_s_per_candidate": real["overhead_s_per_candidate"],
            "model_over_fake_overhead": round(real["model_s_per_candidate"] / overhead, 1) if overhead else None,
            "embedded_accepted": real["accepted"], "embedded_candidates": real["candidates"],
            "embedded_accepted_per_hour": real["accepted_per_hour"],
            "embedded_tokens_per_accepted": real["tokens_per_accepted"],
            "embedded_tokens_per_candidate": real["tokens_per_candidate"],
        }
    return emit(summary)


if __name__ == "__main__":
    main()
