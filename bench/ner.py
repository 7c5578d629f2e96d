"""NER and entity-statistics stages for bench/ingest.py (which imports ``ENTITY_STAGES``).

They run after ``stage_pipeline`` on the store it filled (chunks at the default
chunk size, entities off), in this order:

* ``stage_ner_model``: the NER pipeline alone over the same chunk texts, with the
  same worker processes and batches as the real path, results dropped: the floor;
* ``stage_ner``: ``annotate_chunks`` (NER + keys + alias rules + writing mentions);
* ``stage_stats``: ``compute_statistics`` (the corpus identity step, then one generation in DuckDB).

Figures: words per second for each, the whole ingest (corpus pipeline + NER +
statistics) next to the NER model alone, and the overhead of everything else on
top of the model, which should stay at or under 20 %. Worker processes' peak memory
is reported apart from the bench process's own. The machine's load average is
printed too: on a shared machine the rates move with it.
"""

from __future__ import annotations

import os
import resource
import time
from typing import Any


def _texts(ctx) -> list[str]:
    rows = ctx.store.query("SELECT text FROM chunks WHERE lang = ? ORDER BY doc_id, n", [ctx.lang])
    return [r["text"] for r in rows]


def _model_only(lang: str, texts: list[str], batch_size: int) -> int:
    from factory.nlp.models import load_pipeline

    return sum(len(doc.ents) for doc in load_pipeline(lang).pipe(texts, batch_size=batch_size))


def stage_ner_model(ctx) -> dict[str, Any]:
    import multiprocessing
    from collections import deque

    from factory.nlp.models import load_pipeline
    from factory.nlp.pipeline import worker_count

    texts = _texts(ctx)
    ctx.ner_words = sum(len(t.split()) for t in texts)
    n_process = worker_count(ctx.settings, len(texts))
    batch = ctx.settings.nlp.batch_size
    load_pipeline(ctx.lang)
    started = time.perf_counter()
    if n_process == 1:
        ents = _model_only(ctx.lang, texts, batch)
    else:
        ents = 0
        with multiprocessing.get_context("fork").Pool(n_process) as pool:
            pending: deque = deque()
            for i in range(0, len(texts), batch * 4):
                pending.append(pool.apply_async(_model_only, (ctx.lang, texts[i:i + batch * 4], batch)))
                if len(pending) >= 2 * n_process:
                    ents += pending.popleft().get()
            while pending:
                ents += pending.popleft().get()
    seconds = time.perf_counter() - started
    ctx.ner_model_s = seconds
    return {"ner_words": ctx.ner_words, "ner_processes": n_process, "ner_batch_size": batch,
            "ner_model_s": round(seconds, 3), "ner_model_words_per_s": round(ctx.ner_words / seconds, 1),
            "ner_model_entities": ents}


def stage_ner(ctx) -> dict[str, Any]:
    from factory.nlp.pipeline import annotate_chunks

    started = time.perf_counter()
    mentions = annotate_chunks(ctx.store, ctx.lang, ctx.settings, "bench", progress=False)
    seconds = time.perf_counter() - started
    ctx.annotate_s = seconds
    return {"annotate_s": round(seconds, 3), "annotate_words_per_s": round(ctx.ner_words / seconds, 1),
            "mentions": mentions}


def stage_stats(ctx) -> dict[str, Any]:
    from factory.graph.stats import compute_statistics

    started = time.perf_counter()
    summary = compute_statistics(ctx.store, "bench")
    seconds = time.perf_counter() - started
    return {"stats_s": round(seconds, 3), "entities": summary["n_entities"], "pairs": summary["n_pairs"]}


def stage_entity_memory(ctx) -> dict[str, Any]:
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"ner_workers_peak_rss_mb": round(children, 1), "load_avg_1m": round(os.getloadavg()[0], 2)}


ENTITY_STAGES = [stage_ner_model, stage_ner, stage_stats, stage_entity_memory]


def totals(figures: dict[str, Any]) -> dict[str, Any]:
    """Whole-ingest figures from one corpus's line (corpus pipeline + NER + statistics)."""
    if "annotate_s" not in figures:
        return {}
    whole = figures["ingest_s"] + figures["annotate_s"] + figures["stats_s"]
    return {
        "whole_ingest_s": round(whole, 3),
        "whole_ingest_words_per_s": round(figures["ner_words"] / whole, 1),
        "overhead_over_ner_model_pct": round(100 * (whole / figures["ner_model_s"] - 1), 1),
    }
