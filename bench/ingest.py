"""Ingest throughput and peak memory on the shared corpora; prints one JSON line per corpus and a total.

    .venv/bin/python bench/ingest.py [--corpus NAME ...] [--chunk-tokens N]

Each corpus runs in its own process (so peak memory is that corpus's alone). The
stages are functions ``stage_*(ctx) -> dict`` listed in ``STAGES``: each measures
one step on its own, and ``stage_pipeline`` measures the whole
read + chunk + dedup + store path through ``factory.ingest.ingest`` (entities
off) in a fresh store. To measure another step (NER, statistics), write a stage
function and add it to ``STAGES``; it can use ``ctx.store`` after the pipeline stage.
"""

from __future__ import annotations

import sys
from pathlib import Path

# python puts this folder first on sys.path, where a bench script's name can shadow a
# standard module (bench/select.py hides `select`): drop it before importing anything else
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import importlib.util
import json
import multiprocessing as mp
import resource
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CORPORA = {
    "en-wiki-vital": ("en", ROOT.parent / "shared" / "corpora" / "en-wiki-vital" / "docs.jsonl"),
    "ru-wikinews": ("ru", ROOT.parent / "shared" / "corpora" / "ru-wikinews" / "docs.jsonl"),
}


@dataclass
class Context:
    name: str
    lang: str
    path: Path
    settings: Any
    workdir: Path
    docs: list = field(default_factory=list)
    chunks: list = field(default_factory=list)
    store: Any = None


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def stage_read(ctx: Context) -> dict[str, Any]:
    from factory.corpus.readers import CorpusReader

    started = time.perf_counter()
    ctx.docs = list(CorpusReader(ctx.path, ctx.lang, max_doc_chars=ctx.settings.ingest.max_doc_chars))  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    return {"docs": len(ctx.docs), "chars": sum(len(d.text) for d in ctx.docs), "read_s": round(seconds, 3),
            "read_docs_per_s": _rate(len(ctx.docs), seconds)}


def stage_chunk(ctx: Context) -> dict[str, Any]:
    from factory.corpus.chunking import Chunker

    chunker = Chunker(ctx.lang, ctx.settings.ingest.chunk_tokens)  # type: ignore[arg-type]
    chunker.chunk_many(ctx.docs[:1])  # load the pipeline outside the timing
    started = time.perf_counter()
    ctx.chunks = [c for _, cs in chunker.iter_chunks(ctx.docs) for c in cs]
    seconds = time.perf_counter() - started
    return {"chunks": len(ctx.chunks), "chunk_s": round(seconds, 3), "chunk_docs_per_s": _rate(len(ctx.docs), seconds)}


def stage_dedup(ctx: Context) -> dict[str, Any]:
    from factory.corpus.dedup import DedupIndex, Sketcher

    sketcher = Sketcher(ctx.settings.ingest.minhash_perm)
    index = DedupIndex(sketcher, ctx.settings.ingest.minhash_threshold, "chunk")
    started = time.perf_counter()
    found = sum(1 for c in ctx.chunks if index.add(c.chunk_id, sketcher.sketch(c.text)))
    seconds = time.perf_counter() - started
    return {"near_dup_chunks": found, "dedup_s": round(seconds, 3), "dedup_chunks_per_s": _rate(len(ctx.chunks), seconds)}


def stage_pipeline(ctx: Context) -> dict[str, Any]:
    from factory.ingest import ingest
    from factory.store import Store

    ctx.store = Store(ctx.workdir / "store")
    summary = ingest(ctx.path, ctx.store, ctx.lang, ctx.settings, entities=False)  # type: ignore[arg-type]
    rerun = ingest(ctx.path, ctx.store, ctx.lang, ctx.settings, entities=False)  # type: ignore[arg-type]
    return {
        "ingest_s": summary.corpus_s,
        "ingest_docs_per_s": _rate(summary.docs_read, summary.corpus_s),
        "ingest_chunks_per_s": _rate(summary.chunks_written, summary.corpus_s),
        "ingest_words_per_s": summary.words_per_s,
        "stored_chunks": summary.chunks_written,
        "rerun_s": rerun.corpus_s,
        "rerun_unchanged": rerun.docs_unchanged,
    }


# the pipeline runs first, so that the peak memory measured after it is the pipeline's own
STAGES: list[Callable[[Context], dict[str, Any]]] = [stage_pipeline, stage_read, stage_chunk, stage_dedup]

# bench/ner.py: the NER and entity-statistics stages, after the pipeline (loaded by path:
# bench/select.py would shadow the standard library's select if bench/ were on sys.path)
_spec = importlib.util.spec_from_file_location("bench_ner", Path(__file__).with_name("ner.py"))
ner = sys.modules["bench_ner"] = importlib.util.module_from_spec(_spec)  # registered: its workers pickle
_spec.loader.exec_module(ner)

STAGES += ner.ENTITY_STAGES


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_corpus(name: str, chunk_tokens: int | None) -> dict[str, Any]:
    from factory.settings import load_settings

    lang, path = CORPORA[name]
    settings = load_settings(**{"ingest.chunk_tokens": chunk_tokens})
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        ctx = Context(name=name, lang=lang, path=path, settings=settings, workdir=Path(tmp))
        figures: dict[str, Any] = {"corpus": name, "lang": lang, "chunk_tokens": settings.ingest.chunk_tokens}
        for stage in STAGES:
            figures.update(stage(ctx))
            figures[f"peak_rss_mb_after_{stage.__name__.removeprefix('stage_')}"] = _peak_mb()
        figures.update(ner.totals(figures))
    figures["peak_rss_mb"] = _peak_mb()
    return figures


def _child(name: str, chunk_tokens: int | None, queue) -> None:
    queue.put(run_corpus(name, chunk_tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="default: all")
    parser.add_argument("--chunk-tokens", type=int, default=None)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    lines = []
    for name in args.corpus or list(CORPORA):
        queue = ctx.Queue()
        process = ctx.Process(target=_child, args=(name, args.chunk_tokens, queue))
        process.start()
        line = queue.get()
        process.join()
        lines.append(line)
        print(json.dumps(line), flush=True)
    ingest_s = sum(l["ingest_s"] for l in lines)
    print(json.dumps({
        "corpus": "total",
        "docs": sum(l["docs"] for l in lines),
        "chunks": sum(l["stored_chunks"] for l in lines),
        "ingest_s": round(ingest_s, 3),
        "ingest_docs_per_s": _rate(sum(l["docs"] for l in lines), ingest_s),
        "ingest_chunks_per_s": _rate(sum(l["stored_chunks"] for l in lines), ingest_s),
        "peak_rss_mb": max(l["peak_rss_mb"] for l in lines),
        "pipeline_peak_rss_mb": max(l["peak_rss_mb_after_pipeline"] for l in lines),
    }), flush=True)


if __name__ == "__main__":
    main()
