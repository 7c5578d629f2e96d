"""Throughput against a simulated vLLM server: is it kept busy, and what does an accepted task cost?

    .venv/bin/python -m bench.throughput [--quick] [--corpus ru-wikinews] [--concurrency 1,16,auto,96]
        [--scale 20] [--work DIR] [--store DIR]

The server is the package's fake OpenAI-compatible server on its load model
(``factory/llm/fake_load.py``): 64 sequences in flight at most, 8,000 prefill tokens/s
shared, 60 decode tokens/s for a sequence alone and 25 each at 64, queueing beyond,
on a clock ``--scale`` times faster than real time; ``fake:factory`` answers the
factory's prompts (so the figures measure the factory and the server model, not a
model's answers). It runs in its own process: the CPU time measured here is the
factory's alone.

Each sweep point is a fresh copy of the ingested store (no LLM cache), a fresh server,
and the generation loop of ``build-benchmark`` (``factory/generate``: the driver draws
and settles in order in this process, the scheduler keeps candidates in flight on a
thread pool, each candidate runs on the workers' context) without Prefect, in its own
process, through ``run_loop``, the one function that wires the bench to the loop.
``--concurrency auto`` is the defaults as a user gets them (``factory/capacity.py``:
``llm.server_capacity`` 64 candidates, twice as many calls, lookahead 256); a number
``c`` sets ``generate.concurrency = c``, ``llm.concurrency`` = ``--llm-concurrency``
(default 2c) and the lookahead to the larger of c and 256, so that every point draws the same
candidates in the same order (the lookahead caps
the candidates in flight).

Figures per point, in simulated time: accepted candidates per hour, requests/s, the
server's utilisation (mean sequences in flight over capacity; over its busy window,
and over the steady window from the first settled candidate until only c remain),
request latency, the factory's CPU seconds per candidate, its share of simulated
wall time (the cores it needs beside a real server) and its share of each candidate's
own wall time (CPU over the time the candidates spent in flight), peak memory, and tokens per
accepted task by stage (from the store's ``run_cost`` view). The ideal is the load
model's: the most requests/s the server finishes for the measured request mix, kept
full, times the accepted tasks per request. The last line is the JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from bench.common import CORPORA, emit, in_process, load_avg, note, rss_mb

SERVER = {"capacity": 64, "prefill": 8000.0, "decode_alone": 60.0, "decode_full": 25.0}
LANGS = {"ru-wikinews": "ru", "en-wiki-vital": "en"}
MODEL = "fake-vllm"


# ------------------------------------------------------------------ the one wiring to the loop
def run_loop(store_path: Path, index_dir: Path, settings: Any, *, lang: str, run_id: str, max_attempts: int,
             on_settled: Callable[[Any], None]) -> tuple[Any, Any]:
    """The generation step of ``build-benchmark`` without Prefect: the driver in this process
    draws and settles in order, a thread pool runs the candidates on the workers' context
    (``run_job``), the store is compacted every ``COMPACT_EVERY`` settled candidates as the
    flow does. Returns the run's report and its limits (concurrency and lookahead resolved)."""
    from concurrent.futures import ThreadPoolExecutor

    from flows.generation import COMPACT_EVERY, compact
    from factory.generate import GenerationRun, RunLimits, RunReport, close_contexts, run_in_order, run_job, start_run
    from factory.store import Store

    limits = RunLimits.from_settings(settings, n=None, max_attempts=max_attempts)
    run = GenerationRun(store=str(store_path), index_dir=str(index_dir), settings=settings, lang=lang, run_id=run_id,
                        seed=settings.seed, limits=limits)
    driver, spec, state = start_run(run)
    store = Store(store_path)
    settled = [0]

    def settle(outcome: Any, report: Any) -> None:
        on_settled(outcome)
        settled[0] += 1
        if settled[0] % COMPACT_EVERY == 0:
            compact(store)

    try:
        with ThreadPoolExecutor(max_workers=limits.in_flight, thread_name_prefix="candidate") as pool:
            report = run_in_order(lambda job: pool.submit(run_job, job, spec), driver, limits, state,
                                  report=RunReport(run_id=run_id), on_outcome=settle)
    finally:
        driver.close()
        close_contexts(run_id)
        compact(store)
    return report, limits


# ---------------------------------------------------------------------------- preparation
def prepare(work: Path, corpus: str, store: Path | None) -> tuple[Path, Path, str]:
    """An ingested store (given, or made once in ``work``) and its BM25 fixed index."""
    from factory.index.fixed import build_index
    from factory.ingest import ingest
    from factory.settings import load_settings
    from factory.store import Store

    lang = LANGS[corpus]
    if store is None:
        store = work / f"store-{corpus}"
        if not (store / "ready").exists():
            shutil.rmtree(store, ignore_errors=True)
            started = time.perf_counter()
            ingest(CORPORA / corpus / "docs.jsonl", Store(store), lang, load_settings())
            (store / "ready").write_text("ingested\n")
            emit({"bench": "throughput", "part": "ingest", "corpus": corpus, "s": round(time.perf_counter() - started, 1)})
    index = work / f"index-{corpus}"
    if not index.exists():
        started = time.perf_counter()
        build_index(Store(store, create=False), index, lang, dense=None, progress=False)
        emit({"bench": "throughput", "part": "index", "corpus": corpus, "s": round(time.perf_counter() - started, 1)})
    return store, index, lang


def fresh_store(source: Path, target: Path) -> Path:
    """A copy without an LLM log: an earlier point's cache must not answer this one's prompts."""
    from factory.store import Store

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("catalog.duckdb", "locks"))
    copy = Store(target, create=False)
    for table in ("llm_calls", "candidates", "drafts", "verdicts", "tasks", "agent_episodes", "agent_rounds",
                  "agent_turns"):
        for segment in copy.segments(table):  # the schema segment stays
            segment.unlink()
    return target


class Server:
    """The fake vLLM server in its own process (``python -m factory.llm.fake_server``)."""

    def __init__(self, scale: float) -> None:
        args = [sys.executable, "-m", "factory.llm.fake_server", "--answers", "factory", "--model", MODEL,
                "--capacity", str(SERVER["capacity"]), "--prefill", str(SERVER["prefill"]),
                "--decode-alone", str(SERVER["decode_alone"]), "--decode-full", str(SERVER["decode_full"]),
                "--scale", str(scale), "--until-stdin-closes"]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise RuntimeError("the fake server did not start")
        self.url = json.loads(line)["url"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()  # the server stops when its stdin closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()


def server_stats(url: str) -> dict[str, Any]:
    import httpx

    return httpx.get(url.removesuffix("/v1") + "/load", timeout=10).json()


# ------------------------------------------------------------------------------ one point
def point(config: dict[str, Any]) -> dict[str, Any]:
    """One sweep point, in its own process (its CPU time and memory are its own)."""
    from factory.cost import run_cost
    from factory.settings import load_settings
    from factory.store import Store

    SERVER.update(config["server"])  # a spawned process: the parent's --prefill is in the config
    url = config["url"]
    settings = load_settings(**{"llm.spec": f"openai:{url}#{MODEL}?timeout=600", "lang": config["lang"],
                                "seed": config["seed"], "llm.server_capacity": SERVER["capacity"], **config["flags"]})
    c = config["concurrency"]  # candidates in flight, as the point's settings resolve
    run_id = f"throughput-{config['setting']}-l{config['llm_concurrency']}"
    n = config["candidates"]
    marks: dict[str, Any] = {"settled": 0, "accepted": 0, "candidate_wall_s": 0.0}
    lock = threading.Lock()

    def snapshot(name: str) -> None:
        marks[name] = (time.process_time(), server_stats(url))

    def on_settled(outcome: Any) -> None:
        with lock:
            marks["settled"] += 1
            marks["accepted"] += outcome.status == "accepted"
            marks["candidate_wall_s"] += outcome.elapsed_s  # real seconds on a worker, start to settle
            if marks["settled"] == 1:
                snapshot("steady_start")  # every slot had a candidate by then
            if marks["settled"] == max(1, n - c):
                snapshot("steady_end")  # from here on fewer than c candidates are left to run

    peak = {"rss": rss_mb()}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.25):
            peak["rss"] = max(peak["rss"], rss_mb())

    baseline = rss_mb()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu0, t0 = time.process_time(), time.perf_counter()
    start = server_stats(url)
    report, limits = run_loop(Path(config["store"]), Path(config["index"]), settings, lang=config["lang"],
                              run_id=run_id, max_attempts=n, on_settled=on_settled)
    assert (limits.in_flight, limits.lookahead) == (c, config["lookahead"]), (limits, config)
    real_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    stop.set()
    end = server_stats(url)
    cost = run_cost(Store(Path(config["store"]), create=False), run_id)
    return summarise_point(config, start, end, marks, real_s, cpu_s, cost, report, baseline, peak["rss"])


def drafted_share(rows: list[dict[str, Any]]) -> float | None:
    """Rejections decided before any agent run among candidates that got a draft (selection
    failures left out), pooled over ``rows``."""
    unselected = sum(r["rejected_by"].get("select", 0) for r in rows)
    rejected = sum(r["rejected"] for r in rows) - unselected
    early = sum(r["rejected_before_agent"] for r in rows) - unselected
    return round(early / rejected, 3) if rejected else None


def summarise_point(config: dict[str, Any], start: dict, end: dict, marks: dict, real_s: float, cpu_s: float,
                    cost: Any, report: Any, baseline_mb: float, peak_mb: float) -> dict[str, Any]:
    """A point's figures. Rates are over the server's busy window (first request to last
    answer), and again over the steady window, taken from the server's own counters
    (settling in candidate order comes in bursts; requests flow evenly)."""
    from factory.llm.fake_load import LoadModel

    c, capacity = config["concurrency"], SERVER["capacity"]
    requests = end["requests"] - start["requests"]
    prompt = end["prompt_tokens"] - start["prompt_tokens"]
    completion = end["completion_tokens"] - start["completion_tokens"]
    busy = end["busy_window_s"]
    model = LoadModel(capacity, SERVER["prefill"], SERVER["decode_alone"], SERVER["decode_full"])
    ideal_rps = model.ideal_requests_per_s(prompt / requests, completion / requests) if requests else 0.0
    accepted, finished = cost.accepted, cost.finished
    per_request = accepted / requests if requests else 0.0  # accepted tasks per request
    per_candidate = requests / finished if finished else 0.0
    steady: dict[str, Any] = {}
    if "steady_start" in marks and "steady_end" in marks:
        (cpu1, s1), (cpu2, s2) = marks["steady_start"], marks["steady_end"]
        window, done = s2["now_s"] - s1["now_s"], s2["requests"] - s1["requests"]
        if window > 0 and done > 0:
            rps = done / window
            steady = {"steady_window_s": round(window, 1), "steady_requests": done,
                      "steady_requests_per_s": round(rps, 3),
                      "steady_utilisation": round((s2["seq_s"] - s1["seq_s"]) / (capacity * window), 3),
                      # the other resource the server can run out of: its prefill rate (prompt tokens
                      # are counted when their request ends, so a window can read a little above 1)
                      "steady_prefill_busy": round((s2["prompt_tokens"] - s1["prompt_tokens"])
                                                   / (SERVER["prefill"] * window), 3),
                      "steady_accepted_per_hour": round(rps * 3600 * per_request, 1),
                      "steady_cpu_s_per_candidate": round((cpu2 - cpu1) / done * per_candidate, 3),
                      "steady_factory_cpu_share": round((cpu2 - cpu1) / window, 4)}
    stages = {s["stage"]: {"tokens_in": s["tokens_in_per_accepted"], "tokens_out": s["tokens_out_per_accepted"],
                           "calls": s["calls"]} for s in cost.stages}
    return {
        "setting": config["setting"], "concurrency": c, "llm_concurrency": config["llm_concurrency"],
        "lookahead": config["lookahead"],
        "candidates": finished, "accepted": accepted, "rejected": cost.rejected,
        "rejected_before_agent": cost.rejected_before_agent,
        "rejected_before_agent_share": cost.rejected_before_agent_share, "rejected_by": cost.rejected_by,
        "stopped_by": report.stopped_by,
        "failed": report.failed, "real_s": round(real_s, 1), "busy_window_s": round(busy, 1),
        "accepted_per_hour": round(accepted / busy * 3600, 1) if busy else 0.0,
        "candidates_per_hour": round(finished / busy * 3600, 1) if busy else 0.0,
        "requests_per_s": round(requests / busy, 3) if busy else 0.0,
        "utilisation": round(end["utilisation"], 3), "max_in_flight": end["max_in_flight"],
        "prefill_busy": round(prompt / (SERVER["prefill"] * busy), 3) if busy else 0.0,
        "max_queued": end["max_queued"], "mean_latency_s": round(end["mean_latency_s"], 2),
        "mean_queue_s": round(end["mean_queue_s"], 2),
        "prompt_tokens_per_request": round(prompt / requests, 1) if requests else None,
        "completion_tokens_per_request": round(completion / requests, 1) if requests else None,
        "ideal_requests_per_s": round(ideal_rps, 3),
        "ideal_accepted_per_hour": round(ideal_rps * 3600 * per_request, 1),
        "requests_per_candidate": round(per_candidate, 1) if finished else None,
        "cpu_s_per_candidate": round(cpu_s / finished, 3) if finished else None,  # set-up included
        "factory_cpu_share": round(cpu_s / (real_s * config["scale"]), 4) if real_s else None,
        "factory_cpu_of_real_wall": round(cpu_s / real_s, 3) if real_s else None,
        # per candidate: the factory's CPU over the (simulated) wall time the candidates spent in
        # flight, set-up included; the rest of a candidate's time is waiting on the server
        "cpu_share_of_candidate_wall": (round(cpu_s / (marks["candidate_wall_s"] * config["scale"]), 4)
                                        if marks.get("candidate_wall_s") else None),
        "baseline_rss_mb": baseline_mb, "peak_rss_mb": peak_mb,
        "tokens_per_accepted": {"in": cost.total["tokens_in_per_accepted"], "out": cost.total["tokens_out_per_accepted"]},
        "tokens_per_accepted_by_stage": stages, **steady,
    }


# ---------------------------------------------------------------------------------- sweep
def table(rows: list[dict[str, Any]]) -> str:
    """The sweep as a Markdown table (steady figures where the point had a steady window)."""
    head = ["setting", "c", "llm.conc", "lookahead", "clock x", "cand", "acc", "acc/h", "steady acc/h", "ideal acc/h",
            "req/s", "steady req/s", "util", "steady util", "steady prefill busy", "max in flight", "lat s", "queue s",
            "cpu s/cand",
            "cpu share", "cpu/cand wall", "cpu/real wall", "peak MB", "rej before agent"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        lines.append(" | ".join(str(x) for x in (
            r["setting"], r["concurrency"], r["llm_concurrency"], r["lookahead"], r["scale"], r["candidates"],
            r["accepted"], r["accepted_per_hour"],
            r.get("steady_accepted_per_hour", "-"), r["ideal_accepted_per_hour"], r["requests_per_s"],
            r.get("steady_requests_per_s", "-"), r["utilisation"], r.get("steady_utilisation", "-"),
            r.get("steady_prefill_busy", "-"), r["max_in_flight"], r["mean_latency_s"], r["mean_queue_s"],
            r.get("steady_cpu_s_per_candidate", r["cpu_s_per_candidate"]),
            r.get("steady_factory_cpu_share", r["factory_cpu_share"]), r.get("cpu_share_of_candidate_wall", "-"),
            r["factory_cpu_of_real_wall"],
            r["peak_rss_mb"], f"{r['rejected_before_agent']}/{r['rejected']}")))
    return "\n".join(lines)


def stage_table(row: dict[str, Any]) -> str:
    lines = ["stage | calls | tokens in / accepted | tokens out / accepted", "--- | --- | --- | ---"]
    for stage, figures in row["tokens_per_accepted_by_stage"].items():
        lines.append(f"{stage} | {figures['calls']} | {figures['tokens_in']} | {figures['tokens_out']}")
    total = row["tokens_per_accepted"]
    lines.append(f"all | - | {total['in']} | {total['out']}")
    return "\n".join(lines)


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The smallest concurrency whose steady request rate is within 5 % of the sweep's best.

    Ranked by what the server does (requests/s), not by accepted tasks/h: the acceptance
    rate differs between points (a longer point meets more accepted tasks to duplicate), so
    accepted/h would rank points by their candidates, not by the server. Where prefill binds,
    few candidates already keep it busy (``steady_prefill_busy``) while most slots sit idle.
    """
    def steady(r: dict[str, Any], name: str) -> Any:
        value = r.get(f"steady_{name}")
        return r[name] if value is None else value

    best = max(steady(r, "requests_per_s") for r in rows)
    # at equal numbers the defaults (auto) win: that is what a user gets without setting anything
    pick = min((r for r in rows if steady(r, "requests_per_s") >= 0.95 * best),
               key=lambda r: (r["concurrency"], r["llm_concurrency"], r["setting"] != "auto"))
    return {"setting": pick["setting"], "concurrency": pick["concurrency"], "llm_concurrency": pick["llm_concurrency"],
            "lookahead": pick["lookahead"],
            "utilisation": steady(pick, "utilisation"), "prefill_busy": steady(pick, "prefill_busy"),
            "accepted_per_hour": steady(pick, "accepted_per_hour"),
            "ideal_per_hour": pick["ideal_accepted_per_hour"], "factory_cpu_share": steady(pick, "factory_cpu_share"),
            "cpu_s_per_candidate": steady(pick, "cpu_s_per_candidate"),
            "cpu_share_of_candidate_wall": pick.get("cpu_share_of_candidate_wall"),
            "requests_per_s": steady(pick, "requests_per_s"), "ideal_requests_per_s": pick["ideal_requests_per_s"],
            "scale": pick["scale"]}


class Calibration:
    """What the next point's clock scale is chosen from: the factory's CPU per candidate and
    requests per candidate measured so far (or first guesses), and a bound on the point's
    request rate (the server's ideal, and what its in-flight cap allows at the fastest latency).

    The scale keeps the factory's real-time CPU need under ``cpu_budget`` cores: a factory
    starved of CPU would throttle the server, and the scaled figures would blame the server.
    """

    def __init__(self, cpu_budget: float, max_scale: float) -> None:
        self.cpu_budget, self.max_scale = cpu_budget, max_scale
        self.cpu_per_candidate, self.requests_per_candidate = 0.5, 13.0
        self.prompt, self.completion = 900.0, 90.0

    def update(self, row: dict[str, Any]) -> None:
        measured = row.get("steady_cpu_s_per_candidate") or row.get("cpu_s_per_candidate")
        if measured:
            self.cpu_per_candidate = measured
        if row.get("requests_per_candidate"):
            self.requests_per_candidate = row["requests_per_candidate"]
            self.prompt, self.completion = row["prompt_tokens_per_request"], row["completion_tokens_per_request"]

    def scale(self, c: int, llm_c: int) -> float:
        from factory.llm.fake_load import LoadModel

        model = LoadModel(SERVER["capacity"], SERVER["prefill"], SERVER["decode_alone"], SERVER["decode_full"])
        in_flight = min(llm_c, 2 * c, SERVER["capacity"])  # a candidate rarely has more than two calls out
        rps = min(model.ideal_requests_per_s(self.prompt, self.completion),
                  in_flight / model.latency_alone(int(self.prompt), int(self.completion)))
        need = rps / self.requests_per_candidate * self.cpu_per_candidate  # cores at scale 1
        return round(max(1.0, min(self.max_scale, self.cpu_budget / need)), 2) if need > 0 else self.max_scale


def point_settings(level: str, llm_concurrency: str, lookahead: int | None = None) -> tuple[dict[str, Any], Any]:
    """A sweep point's flags (none for ``auto``: the defaults, unless ``lookahead`` is set)
    and what they resolve to."""
    from factory.capacity import LOOKAHEAD_PER_SLOT, resolve_concurrency
    from factory.settings import load_settings

    flags: dict[str, Any] = {"generate.lookahead": lookahead} if lookahead else {}
    if level != "auto":
        c = int(level)
        calls = max(1, int(float(llm_concurrency[:-1]) * c)) if llm_concurrency.endswith("x") else int(llm_concurrency)
        flags = {"generate.concurrency": c, "llm.concurrency": calls,
                 "generate.lookahead": max(c, lookahead or LOOKAHEAD_PER_SLOT * SERVER["capacity"])}
    settings = load_settings(**{"llm.spec": f"openai:http://127.0.0.1:1/v1#{MODEL}", "llm.server_capacity":
                                SERVER["capacity"], **flags})
    return flags, resolve_concurrency(settings.llm, settings.generate)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and candidates (about 8 minutes)")
    parser.add_argument("--corpus", choices=sorted(LANGS), default="ru-wikinews")
    parser.add_argument("--store", type=Path, default=None, help="an ingested store of that corpus (default: ingest)")
    parser.add_argument("--work", type=Path, default=None, help="keep the store and index here between runs")
    parser.add_argument("--concurrency", default=None, help="candidates in flight, comma-separated; auto: the defaults")
    parser.add_argument("--llm-concurrency", default="2x", help="llm.concurrency: a number, or Nx (N times c)")
    parser.add_argument("--candidates", type=int, default=None, help="candidates per point (default: 3c, quick 2c)")
    parser.add_argument("--scale", type=float, default=None, help="simulated seconds per real second (default: "
                        "chosen per point so the factory needs at most --cpu-budget cores in real time)")
    parser.add_argument("--cpu-budget", type=float, default=0.5, help="cores the factory may need in real time")
    parser.add_argument("--max-scale", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--lookahead", type=int, default=None,
                        help="generate.lookahead at every point (default: the larger of c and four times the capacity, "
                             "the default's own value); another lookahead draws other candidates")
    parser.add_argument("--prefill", type=float, default=SERVER["prefill"],
                        help="the load model's prefill tokens/s, shared by the batch (a faster GPU or a smaller model)")
    args = parser.parse_args(argv)
    SERVER["prefill"] = args.prefill
    levels = (args.concurrency or ("1,16,auto" if args.quick else "1,16,32,auto,96")).split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    started, load_start = time.perf_counter(), load_avg()
    store, index, lang = prepare(work, args.corpus, args.store)
    calibration = Calibration(args.cpu_budget, args.max_scale)
    rows = []
    for level in levels:
        flags, resolved = point_settings(level.strip(), args.llm_concurrency, args.lookahead)
        c, llm_c = resolved.in_flight, resolved.llm_calls
        n = args.candidates or max(12 if c > 1 else 8, (2 if args.quick else 3) * c)
        scale = args.scale or calibration.scale(c, llm_c)
        server = Server(scale)
        try:
            config = {"setting": level.strip(), "flags": flags, "concurrency": c, "llm_concurrency": llm_c,
                      "lookahead": resolved.lookahead, "url": server.url, "lang": lang, "seed": args.seed,
                      "candidates": n, "scale": scale, "index": str(index), "server": dict(SERVER),
                      "store": str(fresh_store(store, work / "point-store"))}
            note(f"[throughput] {level}: c={c} llm.concurrency={llm_c} lookahead={resolved.lookahead}: "
                 f"{n} candidates, clock x{scale}")
            row = in_process(point, config)
        finally:
            server.close()
        if "error" in row:
            emit({"bench": "throughput", "setting": level, "concurrency": c, "llm_concurrency": llm_c, **row})
            continue
        row.update(scale=scale, cpu_bound=bool(row["factory_cpu_of_real_wall"] and row["factory_cpu_of_real_wall"] > 0.8))
        calibration.update(row)
        rows.append(emit({"bench": "throughput", **row}))
    if not rows:
        raise SystemExit("no sweep point finished")
    print(table(rows), flush=True)
    swept = rows
    recommended = recommend(rows)
    pick = next(r for r in rows if r["setting"] == recommended["setting"])
    print(f"\ntokens per accepted task at {pick['setting']} (c={pick['concurrency']}, llm.concurrency "
          f"{pick['llm_concurrency']}):", flush=True)
    print(stage_table(pick), flush=True)
    print(f"rejected by: {pick['rejected_by']}; before any agent run: {pick['rejected_before_agent_share']}; "
          f"of those that reached a draft (not 'select', which costs no call): {drafted_share([pick])}", flush=True)
    ones = [r for r in swept if r["concurrency"] == 1]
    if ones and len(swept) > 1:
        top = max(swept, key=lambda r: r["concurrency"])
        per = (top["peak_rss_mb"] - ones[0]["peak_rss_mb"]) / max(1, top["concurrency"] - 1)
        print(f"\nmemory: peak {ones[0]['peak_rss_mb']} MB at c=1, {top['peak_rss_mb']} MB at c={top['concurrency']}: "
              f"{per:.1f} MB per candidate in flight", flush=True)
    from factory.llm.fake_load import LoadModel

    limits = LoadModel(SERVER["capacity"], SERVER["prefill"], SERVER["decode_alone"], SERVER["decode_full"]).bounds(
        pick["prompt_tokens_per_request"], pick["completion_tokens_per_request"])
    print(f"\nideal (load model, {pick['prompt_tokens_per_request']} prompt and {pick['completion_tokens_per_request']} "
          f"completion tokens a request): prefill allows {limits['prefill']:.2f} requests/s, the slots "
          f"{limits['slots']:.2f}; recommended c={recommended['concurrency']} (llm.concurrency "
          f"{recommended['llm_concurrency']}) does {recommended['requests_per_s']} requests/s, "
          f"{recommended['requests_per_s'] / recommended['ideal_requests_per_s']:.0%} of the ideal", flush=True)
    rejected = sum(r["rejected"] for r in rows)
    # a cell with no subgraph is decided before any call: the share among drafted candidates says
    # how early the gauntlet itself decides
    emit({"bench": "throughput", "part": "details", "recommended": recommended, "server": SERVER,
          "drafted_rejected_before_agent_share": drafted_share(rows),
          "corpus": args.corpus, "elapsed_s": round(time.perf_counter() - started, 1),
          "load_avg_1m_start": load_start})
    # the last line, with exactly these keys; the share pools every point's rejections
    summary = {"recommended": {k: recommended[k] for k in (
                   "concurrency", "utilisation", "accepted_per_hour", "ideal_per_hour", "factory_cpu_share")}
               | {"setting": recommended["setting"]},
               "rejected_before_agent_share": round(sum(r["rejected_before_agent"] for r in rows) / rejected, 3)
               if rejected else None,
               "sweep": [{k: r.get(k) for k in (
                   "setting", "concurrency", "llm_concurrency", "lookahead", "scale", "candidates", "accepted",
                   "accepted_per_hour", "steady_accepted_per_hour", "ideal_accepted_per_hour", "requests_per_s",
                   "steady_requests_per_s", "utilisation", "steady_utilisation", "steady_prefill_busy",
                   "max_in_flight", "mean_latency_s",
                   "cpu_s_per_candidate", "steady_cpu_s_per_candidate", "factory_cpu_share",
                   "steady_factory_cpu_share", "cpu_share_of_candidate_wall", "factory_cpu_of_real_wall",
                   "cpu_bound", "peak_rss_mb", "rejected", "rejected_before_agent")} for r in rows]}
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
