"""What every bench shares: JSON-line output, memory and load figures, a step in its own process."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora"
EN_WIKI = CORPORA / "en-wiki-vital" / "docs.jsonl"
RU_NEWS = CORPORA / "ru-wikinews" / "docs.jsonl"


_CURRENT = {"bench": ""}


def set_bench(name: str) -> None:
    """Name the bench whose figures follow (``python -m bench`` tags every line with it)."""
    _CURRENT["bench"] = name


def emit(record: dict[str, Any]) -> dict[str, Any]:
    """Print one figure as a JSON line (with the 1-minute load average) and return it."""
    if _CURRENT["bench"] and "bench" not in record:
        record = {"bench": _CURRENT["bench"], **record}
    record = {**record, "load_avg_1m": load_avg()} if "load_avg_1m" not in record else record
    print(json.dumps(record, ensure_ascii=False, default=str), flush=True)
    return record


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def peak_rss_mb() -> float:
    """This process's peak resident memory so far."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def children_peak_rss_mb() -> float:
    """The largest peak of the (waited-for) child processes, e.g. NER workers."""
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def head_lines(src: Path, dst: Path, n: int | None) -> Path:
    """The first ``n`` lines of a JSONL corpus in ``dst`` (the corpus itself when n is None)."""
    if n is None:
        return src
    with open(src, encoding="utf-8") as inp, open(dst, "w", encoding="utf-8") as out:
        for i, line in enumerate(inp):
            if i >= n:
                break
            out.write(line)
    return dst


def _child(target: Callable[..., dict], args: tuple, queue: Any) -> None:
    try:
        started = time.perf_counter()
        result = target(*args) or {}
        result.setdefault("step_s", round(time.perf_counter() - started, 2))
        result.setdefault("peak_rss_mb", peak_rss_mb())
        queue.put(("ok", result))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as a figure
        queue.put(("error", {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}))


def in_process(target: Callable[..., dict], *args: Any) -> dict[str, Any]:
    """Run ``target(*args)`` in a fresh (spawned) process: its peak memory is its own.

    Returns the target's dict, with ``step_s`` and ``peak_rss_mb`` added, or a dict with
    ``error`` when it raised or died (a killed child, e.g. out of memory, says so).
    """
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=_child, args=(target, args, queue))
    process.start()
    result = None
    while result is None:
        try:
            result = queue.get(timeout=5)
        except Exception:  # noqa: BLE001 - queue.Empty: check that the child still lives
            if not process.is_alive():
                process.join()
                return {"error": f"the step's process died (exit code {process.exitcode})"}
    process.join()
    status, payload = result
    return payload


def per_language(doc: str, measure: Callable[[str], dict[str, Any]],
                 report: Callable[[str, dict[str, Any]], None]) -> dict[str, dict[str, Any]]:
    """The shared main of the benches that read the labelled reference fixtures: ``--langs``,
    then ``measure(lang)`` and ``report(lang, found)`` per language; returns the figures."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--langs", default="en,ru")
    args = parser.parse_args()
    summary = {}
    for lang in args.langs.split(","):
        summary[lang] = measure(lang)
        report(lang, summary[lang])
    return summary
