"""LLM seam figures: embedded tokens/s, HTTP throughput by concurrency, gateway overhead.

    .venv/bin/python -m bench.llm [--threads N] [--requests 16] [--only embedded samples server gateway]

Prints one JSON line per measurement and a final JSON line with the summary. The
embedded model is SmolLM2-135M-Instruct (English only); the HTTP figures run the
``openai`` backend against llama-cpp-python's server on 127.0.0.1 (one model, one
lock: concurrency queues there, it does not parallelise; vLLM batches instead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from bench import common
from factory.llm import Gateway, LLMRequest, Sampling, make_llm
from factory.llm.fake import FakeLLM
from factory.llm.llamacpp_backend import SMOLLM2
from factory.llm.local_server import llamacpp_server
from factory.settings import LLMSettings
from factory.store import Store

TOPICS = ["rivers", "mountains", "libraries", "bridges", "forests", "harbours", "deserts", "islands"]
PASSAGE = (
    "The Aldermoor Bridge was completed in 1887 by the engineer Clara Vance. It crosses the river Hollin "
    "and connects the towns of Estbury and Wenlow. In 1932 it was renamed the Vance Bridge in her honour."
)


class Capital(BaseModel):
    city: str
    country: str


class Fact(BaseModel):
    statement: str = Field(description="one atomic fact in your own words")


class FactSheet(BaseModel):
    facts: list[Fact] = Field(max_length=3)


class ShortAnswer(BaseModel):
    answer: str = Field(description="a few words")
    year: int


def emit(record: dict) -> dict:
    return common.emit(record)


def embedded_speed(threads: int) -> dict:
    backend = make_llm("llamacpp:smollm2-135m", LLMSettings(threads=threads))
    free = [
        backend.complete(LLMRequest.chat(None, f"Write a long paragraph about {topic}.", sampling=Sampling(max_tokens=128)))
        for topic in TOPICS[:3]
    ]
    tokens = sum(r.tokens_out for r in free)
    seconds = sum(r.latency_s for r in free)
    long_prompt = " ".join([PASSAGE] * 30)
    prompt = backend.complete(LLMRequest.chat(None, long_prompt + "\nSummarise.", sampling=Sampling(max_tokens=1)))
    structured = [
        backend.complete(LLMRequest.chat("Answer with one JSON object.", f"What is the capital of {c}?", output=Capital,
                                         sampling=Sampling(max_tokens=48)))
        for c in ("France", "Japan", "Kenya")
    ]
    s_tokens = sum(r.tokens_out for r in structured)
    s_seconds = sum(r.latency_s for r in structured)
    return emit({
        "bench": "embedded", "model": backend.model, "threads": backend.threads, "load_s": round(backend.load_s, 3),
        "free_tokens_out": tokens, "free_tokens_per_s": round(tokens / seconds, 1),
        "prompt_tokens": prompt.tokens_in, "prompt_tokens_per_s": round(prompt.tokens_in / prompt.latency_s, 1),
        "structured_tokens_out": s_tokens, "structured_tokens_per_s": round(s_tokens / s_seconds, 1),
        "structured_ok": sum(r.ok for r in structured), "structured_n": len(structured),
    })


def samples(threads: int) -> list[dict]:
    gateway = Gateway(make_llm("llamacpp:smollm2-135m", LLMSettings(threads=threads)), None)
    asks = [
        ("capital", LLMRequest.chat("Answer with one JSON object.", "What is the capital of Japan?", output=Capital,
                                    sampling=Sampling(max_tokens=48))),
        ("fact_sheet", LLMRequest.chat("List the atomic facts of the passage, restated in other words.", PASSAGE,
                                       output=FactSheet, sampling=Sampling(max_tokens=160))),
        ("two_hop", LLMRequest.chat("Answer from the passage only.",
                                    PASSAGE + "\nQuestion: the bridge's engineer gave her name to it in which year?",
                                    output=ShortAnswer, sampling=Sampling(max_tokens=48))),
    ]
    out = []
    for name, request in asks:
        r = gateway.complete(request)
        out.append(emit({"bench": "sample", "name": name, "ok": r.ok, "parsed": r.parsed, "parse_error": r.parse_error,
                         "tokens_out": r.tokens_out, "latency_s": round(r.latency_s, 2)}))
    return out


def server_throughput(threads: int, n_requests: int, levels: tuple[int, ...] = (1, 4, 8)) -> list[dict]:
    out = []
    with llamacpp_server(SMOLLM2.path(), alias="smollm2-135m", threads=threads, context_tokens=4096) as url:
        backend = make_llm(f"openai+llamacpp:{url}#smollm2-135m", LLMSettings(timeout_s=300))
        for concurrency in levels:
            gateway = Gateway(backend, None, concurrency=concurrency)
            requests = [
                LLMRequest.chat(None, f"Write a short paragraph about {TOPICS[i % len(TOPICS)]}.",
                                sampling=Sampling(max_tokens=48), sample_index=i, seed=concurrency)
                for i in range(n_requests)
            ]
            start = time.perf_counter()
            answers = gateway.complete_many(requests)
            wall = time.perf_counter() - start
            tokens = sum(a.tokens_out for a in answers)
            out.append(emit({
                "bench": "server", "concurrency": concurrency, "threads": threads, "requests": n_requests,
                "ok": sum(a.ok for a in answers), "wall_s": round(wall, 2),
                "requests_per_s": round(n_requests / wall, 2), "tokens_out_per_s": round(tokens / wall, 1),
                "median_latency_s": round(statistics.median(a.latency_s for a in answers), 2),
            }))
    return out


def gateway_overhead(n: int = 400) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "store")
        gateway = Gateway(FakeLLM(default={"city": "Paris", "country": "France"}), store)
        requests = [LLMRequest.chat(None, f"q{i}", output=Capital) for i in range(n)]
        start = time.perf_counter()
        for r in requests:
            gateway.complete(r)
        miss = (time.perf_counter() - start) / n
        start = time.perf_counter()
        for r in requests:
            assert gateway.complete(r).cached
        hit = (time.perf_counter() - start) / n
        start = time.perf_counter()
        reloaded = Gateway(FakeLLM(default="unused"), store, compact_over=10**9)
        load = time.perf_counter() - start
        assert reloaded.complete(requests[0]).cached
        start = time.perf_counter()
        merged = Gateway(FakeLLM(default="unused"), store, compact_over=1)  # merges the n segments, then loads
        load_compacting = time.perf_counter() - start
        start = time.perf_counter()
        Gateway(FakeLLM(default="unused"), store)
        load_compacted = time.perf_counter() - start
        assert merged.complete(requests[-1]).cached
        memory = Gateway(FakeLLM(default={"city": "Paris", "country": "France"}), None)
        start = time.perf_counter()
        for r in requests:
            memory.complete(r)
        miss_memory = (time.perf_counter() - start) / n
    return emit({
        "bench": "gateway", "calls": n, "cached_call_us": round(hit * 1e6, 1),
        "recorded_miss_ms": round(miss * 1e3, 3), "unrecorded_miss_ms": round(miss_memory * 1e3, 3),
        "cache_load_s_n_segments": round(load, 3), "cache_load_s_while_compacting": round(load_compacting, 3),
        "cache_load_s_compacted": round(load_compacted, 3),
    })


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--concurrency", default="1,4,8", help="concurrency levels of the server figure")
    parser.add_argument("--only", nargs="*", default=["embedded", "samples", "server", "gateway"],
                        choices=["embedded", "samples", "server", "gateway"])
    args = parser.parse_args(argv)
    # a shared machine: the load average says how much of it these figures had
    summary: dict = {"bench": "llm", "part": "summary", "cpu_count": os.cpu_count(), "load_avg_1m_start": os.getloadavg()[0]}
    if "embedded" in args.only:
        summary["embedded"] = embedded_speed(args.threads)
    if "samples" in args.only:
        summary["samples"] = samples(args.threads)
    if "server" in args.only:
        levels = tuple(int(c) for c in args.concurrency.split(",") if c)
        summary["server"] = server_throughput(args.threads, args.requests, levels)
    if "gateway" in args.only:
        summary["gateway"] = gateway_overhead()
    summary["load_avg_1m_end"] = os.getloadavg()[0]
    return emit(summary)


if __name__ == "__main__":
    main()
