"""Subgraph selection time per cell and per mechanic, and the sampler's convergence.

    .venv/bin/python -m bench.selection --store PATH --lang en [--reps 20]
    .venv/bin/python -m bench.selection --sampler-only

Prints JSON lines: one for loading the selection index, one per cell and one per
mechanic (median / p90 milliseconds of warm calls, success share, the first call
separately because it builds the cached candidate pools), one overall, and one for
the sampler simulation (10,000 draws with a skewed acceptance rate per cell; total
variation distance of accepted tasks from the target shares). Goal: <= 25 ms median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import emit, peak_rss_mb
from factory.graph.select import NoSubgraph, SelectionIndex, select_subgraph
from factory.taxonomy import CellSampler, load_taxonomy


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def bench_selection(store_path: Path, lang: str, reps: int, *, per_cell: bool = True) -> dict[str, Any]:
    """Loads the store's selection index, times every cell; returns the overall figure."""
    from factory.store import Store

    store = Store(store_path, create=False)
    start = time.perf_counter()
    index = SelectionIndex.load(store, lang)
    load_s = time.perf_counter() - start
    emit({"what": "index", "store": str(store_path), "lang": lang, "source": index.source,
          "chunks": len(index.chunk_ids), "entities": len(index.ent_keys),
          "docs": len(set(index.chunk_doc)), "load_s": round(load_s, 3), "peak_rss_mb": peak_rss_mb()})
    return time_cells(index, lang, reps, per_cell=per_cell) | {"index_load_s": round(load_s, 3)}


def time_cells(index: SelectionIndex, lang: str, reps: int, *, per_cell: bool = True) -> dict[str, Any]:
    """Every cell of the taxonomy ``reps`` times (plus a first call that builds the pools)."""
    tax = load_taxonomy()
    per_mechanic: dict[str, list[float]] = defaultdict(list)
    first_calls: dict[str, float] = {}
    outcomes: dict[str, list[bool]] = defaultdict(list)
    everything: list[float] = []
    for cell in tax.cells(lang):
        times, ok, reasons = [], 0, set()
        for rep in range(reps + 1):
            rng = random.Random(f"bench:{cell.key}:{rep}")
            t0 = time.perf_counter()
            try:
                select_subgraph(index, cell, lang, rng, taxonomy=tax)
                success = True
            except NoSubgraph as exc:
                success = False
                reasons.add(exc.reason.split(": ", 1)[-1][:120])
            ms = (time.perf_counter() - t0) * 1000
            if rep == 0:  # builds the pools this mechanic/type needs
                first_calls[cell.key] = ms
                continue
            times.append(ms)
            ok += success
            outcomes[cell.mechanic].append(success)
        per_mechanic[cell.mechanic].extend(times)
        everything.extend(times)
        if per_cell:
            emit({"what": "cell", "cell": cell.key, "median_ms": round(statistics.median(times), 3),
                  "p90_ms": round(pct(times, 0.9), 3), "first_call_ms": round(first_calls[cell.key], 1),
                  "success": round(ok / reps, 3), "why_not": sorted(reasons)[:2]})
    for mechanic, times in sorted(per_mechanic.items()):
        firsts = [v for k, v in first_calls.items() if k.startswith(mechanic + "/")]
        emit({"what": "mechanic", "lang": lang, "mechanic": mechanic, "median_ms": round(statistics.median(times), 3),
              "p90_ms": round(pct(times, 0.9), 3), "max_first_call_ms": round(max(firsts), 1),
              "success": round(sum(outcomes[mechanic]) / len(outcomes[mechanic]), 3), "calls": len(times)})
    return emit({"what": "overall", "lang": lang, "chunks": len(index.chunk_ids),
                 "median_ms": round(statistics.median(everything), 3), "p90_ms": round(pct(everything, 0.9), 3),
                 "max_first_call_ms": round(max(first_calls.values()), 1), "calls": len(everything),
                 "success": round(sum(sum(v) for v in outcomes.values()) / max(1, len(everything)), 3),
                 "goal_median_ms": 25, "meets_goal": statistics.median(everything) <= 25})


def bench_sampler(draws: int = 10_000) -> list[dict[str, Any]]:
    tax = load_taxonomy()
    out = []
    for lang, seed in (("en", 0), ("ru", 1)):
        sampler = CellSampler(tax, seed=seed, lang=lang)
        rates_rng = random.Random(1000 + seed)
        rates = {k: rates_rng.uniform(0.05, 0.95) for k in sampler.targets}
        outcome = random.Random(seed)
        t0 = time.perf_counter()
        for i in range(draws):
            cell = sampler.draw(i)
            if outcome.random() < rates[cell.key]:
                sampler.record_accepted(cell)
        elapsed = time.perf_counter() - t0
        total = sum(sampler.accepted.values())
        tv = 0.5 * sum(abs(sampler.accepted[k] / total - t) for k, t in sampler.targets.items())
        # the same acceptance rates without correction: draw by target share alone
        plain = defaultdict(int)
        keys, shares = list(sampler.targets), list(sampler.targets.values())
        for _ in range(draws):
            key = rates_rng.choices(keys, shares)[0]
            if outcome.random() < rates[key]:
                plain[key] += 1
        plain_total = sum(plain.values())
        tv_plain = 0.5 * sum(abs(plain[k] / plain_total - t) for k, t in sampler.targets.items())
        out.append(emit({"what": "sampler", "lang": lang, "cells": len(sampler.targets), "draws": draws,
                         "accepted": total, "acceptance_rates": "uniform(0.05, 0.95) per cell",
                         "tv_distance": round(tv, 4), "tv_distance_without_correction": round(tv_plain, 4),
                         "goal": 0.05, "us_per_draw": round(elapsed / draws * 1e6, 1)}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--sampler-only", action="store_true")
    args = parser.parse_args()
    bench_sampler()
    if not args.sampler_only:
        if args.store is None:
            parser.error("--store is required unless --sampler-only")
        bench_selection(args.store, args.lang, args.reps)


if __name__ == "__main__":
    main()
