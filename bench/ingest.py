"""Ingest throughput and peak memory on the shared corpora; prints one JSON line per corpus and a total.

    .venv/bin/python -m bench.ingest [--corpus NAME ...] [--chunk-tokens N] [--docs N] [--keep DIR]

Each corpus runs in its own process (so peak memory is that corpus's alone). The
stages are functions ``stage_*(ctx) -> dict`` listed in ``STAGES``: each measures
one step on its own, and ``stage_pipeline`` measures the whole
read + chunk + dedup + store path through ``factory.ingest.ingest`` (entities
off) in a fresh store. To measure another step (NER, statistics), write a stage
function and add it to ``STAGES``; it can use ``ctx.store`` after the pipeline stage.
``--docs N`` ingests only each corpus's first N documents; ``--keep DIR`` keeps the
stores (``DIR/<corpus>/store``, with entity statistics) for other benches.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench import ner
from bench.common import EN_WIKI, RU_NEWS, emit, head_lines, load_avg, peak_rss_mb

CORPORA = {"en-wiki-vital": ("en", EN_WIKI), "ru-wikinews": ("ru", RU_NEWS)}


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

# bench/ner.py: the NER and entity-statistics stages, after the pipeline
STAGES += ner.ENTITY_STAGES


def run_corpus(name: str, chunk_tokens: int | None, docs: int | None = None, keep: Path | None = None) -> dict[str, Any]:
    from factory.settings import load_settings

    lang, source = CORPORA[name]
    settings = load_settings(**{"ingest.chunk_tokens": chunk_tokens})
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        path = head_lines(source, Path(tmp) / "docs.jsonl", docs)
        ctx = Context(name=name, lang=lang, path=path, settings=settings, workdir=Path(tmp))
        figures: dict[str, Any] = {"corpus": name, "lang": lang, "chunk_tokens": settings.ingest.chunk_tokens,
                                   "docs_limit": docs}
        for stage in STAGES:
            figures.update(stage(ctx))
            figures[f"peak_rss_mb_after_{stage.__name__.removeprefix('stage_')}"] = peak_rss_mb()
        figures.update(ner.totals(figures))
        if keep is not None:
            target = keep / name / "store"
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(ctx.workdir / "store"), str(target))
            figures["kept_store"] = str(target)
    figures["peak_rss_mb"] = peak_rss_mb()
    return figures


def _child(name: str, chunk_tokens: int | None, docs: int | None, keep: Path | None, queue) -> None:
    queue.put(run_corpus(name, chunk_tokens, docs, keep))


def bench_corpora(names: list[str], chunk_tokens: int | None = None, docs: int | None = None,
                  keep: Path | None = None) -> list[dict[str, Any]]:
    """One line per corpus, each measured in its own (spawned) process; printed as they come."""
    ctx = mp.get_context("spawn")
    lines = []
    for name in names:
        queue = ctx.Queue()
        started_load = load_avg()
        process = ctx.Process(target=_child, args=(name, chunk_tokens, docs, keep, queue))
        process.start()
        line = queue.get()
        process.join()
        line["load_avg_1m_start"] = started_load
        lines.append(emit(line))
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="default: all")
    parser.add_argument("--chunk-tokens", type=int, default=None)
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents of each corpus")
    parser.add_argument("--keep", type=Path, default=None, help="keep the stores under DIR/<corpus>/store")
    args = parser.parse_args(argv)
    lines = bench_corpora(args.corpus or list(CORPORA), args.chunk_tokens, args.docs, args.keep)
    ingest_s = sum(l["ingest_s"] for l in lines)
    return emit({
        "corpus": "total",
        "docs": sum(l["docs"] for l in lines),
        "chunks": sum(l["stored_chunks"] for l in lines),
        "ingest_s": round(ingest_s, 3),
        "ingest_docs_per_s": _rate(sum(l["docs"] for l in lines), ingest_s),
        "ingest_chunks_per_s": _rate(sum(l["stored_chunks"] for l in lines), ingest_s),
        "peak_rss_mb": max(l["peak_rss_mb"] for l in lines),
        "pipeline_peak_rss_mb": max(l["peak_rss_mb_after_pipeline"] for l in lines),
    })


if __name__ == "__main__":
    main()
