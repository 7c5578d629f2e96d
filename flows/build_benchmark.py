"""`build_benchmark`: the whole factory as one Prefect flow, wiring factory/ functions.

    ingest (idempotent: an unchanged corpus writes nothing)
      -> the fixed index (reopened when it still matches the store, else rebuilt)
      -> candidates in flight on the task runner, one task per candidate index,
         until N tasks are accepted or the attempt or token budget is spent
      -> export: the benchmark folder with its card

Reruns are safe because of database keys, not Prefect caching: every task here has
caching and result persistence off. The run id is derived from the command (language,
corpus, model, seed, output folder, profile), so the same command after a crash
continues the same run: candidates that finished are not started again, accepted
tasks keep their ids, and the LLM gateway serves every recorded call from the store.
"""

from __future__ import annotations

import hashlib
import json
import queue
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from factory.errors import FactoryError
from factory.settings import Settings, load_settings
from factory.store import Store

TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
COMPACT_EVERY = 40  # finished candidates between compactions of the tables they write
COMPACT_TABLES = ("candidates", "drafts", "verdicts", "tasks", "llm_calls")


class BuildError(FactoryError):
    pass


# --------------------------------------------------------------------------- plan
@dataclass
class BuildPlan:
    """Everything a build needs, resolved once from the command's parameters."""

    run_id: str
    lang: str
    corpus: Path
    out: Path
    store_path: Path
    index_dir: Path
    settings: Settings
    n: int
    max_attempts: int
    token_budget: int | None
    concurrency: int
    task_runner: str
    params: dict[str, Any] = field(default_factory=dict)

    def open_store(self) -> Store:
        return Store(self.store_path)


def run_id_for(lang: str, corpus: Path, llm_spec: str, seed: int, out: Path, profile: str) -> str:
    """The same command names the same run, so a rerun continues it."""
    from factory.llm.spec import parse_spec

    identity = {
        "lang": lang,
        "corpus": str(corpus.resolve()),
        "llm": parse_spec(llm_spec).redacted(),  # endpoint URLs may change between tries
        "seed": seed,
        "out": str(out.resolve()),
        "profile": profile,
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    return f"build-{digest}"


def resolve_build(
    lang: str,
    corpus: str | Path,
    n: int | None,
    llm_spec: str | None,
    out: str | Path,
    store: str | Path | None = None,
    config: str | Path | None = None,
    seed: int | None = None,
    profile: str | None = None,
    task_runner: str = "threads",
    concurrency: int | None = None,
    max_attempts: int | None = None,
    token_budget: int | None = None,
) -> BuildPlan:
    """Settings (file < environment < profile < flags) and the run's identity."""
    if lang not in {"en", "ru"}:
        raise BuildError(f"--lang must be en or ru, got {lang!r}")
    corpus, out = Path(corpus), Path(out)
    if not corpus.exists():
        raise BuildError(f"{corpus}: corpus not found")
    flags: dict[str, Any] = {
        "lang": lang,
        "seed": seed,
        "llm.spec": llm_spec,
        "build.n": n,
        "build.profile": profile,
        "build.max_attempts": max_attempts,
        "build.token_budget": token_budget,
        "generate.concurrency": concurrency,
    }
    config_path = Path(config) if config else None
    first = load_settings(config_path, **flags)
    overrides = first.build.overrides(first.build.profile)
    settings = load_settings(config_path, **{**overrides, **{k: v for k, v in flags.items() if v is not None}})
    store_path = Path(store) if store else out / "store"
    build = settings.build
    plan = BuildPlan(
        run_id=run_id_for(lang, corpus, settings.llm.spec, settings.seed, out, build.profile),
        lang=lang,
        corpus=corpus,
        out=out,
        store_path=store_path,
        index_dir=store_path / f"index-{lang}",
        settings=settings,
        n=build.n,
        max_attempts=build.max_attempts or build.n * settings.generate.attempts_per_task,
        token_budget=build.token_budget,
        concurrency=settings.generate.concurrency,
        task_runner=task_runner,
    )
    plan.params = {
        "lang": lang, "corpus": str(corpus), "n": plan.n, "llm_spec": settings.llm.spec, "out": str(out),
        "store": str(store_path), "config": str(config_path) if config_path else None, "seed": settings.seed,
        "profile": build.profile, "task_runner": task_runner, "concurrency": plan.concurrency,
        "max_attempts": plan.max_attempts, "token_budget": plan.token_budget,
    }
    return plan


def make_task_runner(kind: str, workers: int) -> Any:
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=max(1, workers))
    if kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:
            raise BuildError("task runner 'dask' needs the dask extra: pip install -e '.[dask]'") from exc
        return DaskTaskRunner()
    raise BuildError(f"unknown task runner {kind!r}; choose threads or dask")


# ------------------------------------------------------------------ progress state
@dataclass
class RunState:
    """Where a run stands, read from the store (so a rerun picks up the earlier tries)."""

    done: set[int]
    accepted: int
    tokens: int

    @classmethod
    def read(cls, store: Store, run_id: str) -> "RunState":
        done = {
            int(r["idx"]) for r in store.query(
                "SELECT idx FROM candidates WHERE run_id = ? AND status IN ('accepted', 'rejected') AND idx IS NOT NULL",
                [run_id],
            )
        }
        accepted = int(store.scalar("SELECT count(*) FROM tasks WHERE run_id = ?", [run_id]) or 0)
        tokens = int(store.scalar(
            "SELECT coalesce(sum(tokens_in) + sum(tokens_out), 0) FROM llm_calls WHERE run_id = ?", [run_id]
        ) or 0)
        return cls(done=done, accepted=accepted, tokens=tokens)


def pending_indices(done: set[int]) -> Iterator[int]:
    i = 0
    while True:
        if i not in done:
            yield i
        i += 1


@dataclass
class LoopReport:
    accepted: int = 0
    rejected: int = 0
    failed: int = 0
    started: int = 0
    resumed_done: int = 0
    tokens: int = 0
    stopped_by: str = ""
    errors: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------- tasks
@task(name="ingest", **TASK_OPTIONS)
def ingest_corpus(plan: BuildPlan) -> dict[str, Any]:
    from factory.ingest import ingest

    summary = ingest(plan.corpus, plan.open_store(), plan.lang, plan.settings)
    get_run_logger().info(
        "ingest: %d documents read, %d new, %d changed, %d unchanged, %d chunks written",
        summary.docs_read, summary.docs_new, summary.docs_changed, summary.docs_unchanged, summary.chunks_written,
    )
    return summary.model_dump()


@task(name="fixed-index", **TASK_OPTIONS)
def fixed_index(plan: BuildPlan) -> str:
    """Reopen the index when it still matches the store's chunks, else (re)build it."""
    from factory.index.base import SearchIndexError
    from factory.index.fixed import build_index, open_index

    store = plan.open_store()
    logger = get_run_logger()
    try:
        open_index(plan.index_dir, store=store)
        logger.info("index: %s matches the store, reused", plan.index_dir)
    except SearchIndexError as exc:
        logger.info("index: building %s (%s)", plan.index_dir, exc)
        dense = plan.settings.build.dense
        build_index(store, plan.index_dir, plan.lang, plan.settings, dense=None if dense == "none" else dense,
                    progress=False)
    return str(plan.index_dir)


@task(name="candidate", task_run_name="candidate-{idx}", **TASK_OPTIONS)
def candidate(idx: int, ctx: Any) -> Any:
    from factory.generate import generate_candidate

    return generate_candidate(idx, ctx)


@task(name="export", **TASK_OPTIONS)
def export(plan: BuildPlan, cached_calls: int, notes: list[str]) -> dict[str, Any]:
    from factory.export import export_benchmark

    summary = export_benchmark(
        plan.open_store(), plan.index_dir, plan.out, plan.run_id, plan.settings, lang=plan.lang,
        corpus_path=str(plan.corpus), params=plan.params, cached_calls=cached_calls, notes=notes, limit=plan.n,
    )
    return summary.model_dump()


# ------------------------------------------------------------------ generation
def _outcome_status(outcome: Any) -> str:
    status = getattr(outcome, "status", None)
    if status is None and isinstance(outcome, dict):
        status = outcome.get("status")
    return str(status or "")


def _outcome_tokens(outcome: Any) -> int:
    tokens = getattr(outcome, "tokens", None)
    if tokens is None and isinstance(outcome, dict):
        tokens = outcome.get("tokens")
    return int(tokens or 0)


def run_candidates(
    submit: Callable[[int], Any],
    state: RunState,
    plan: BuildPlan,
    *,
    on_outcome: Callable[[int, Any], None] | None = None,
) -> LoopReport:
    """Keep ``plan.concurrency`` candidates in flight until a target or a budget is met.

    ``submit(idx)`` returns a future with ``add_done_callback`` and ``result``.
    Stops starting candidates once accepted >= n, candidates (earlier tries included)
    reach max_attempts, or tokens reach the token budget; lets those in flight finish.
    """
    report = LoopReport(accepted=state.accepted, tokens=state.tokens, resumed_done=len(state.done))
    finished: queue.Queue[Any] = queue.Queue()
    inflight: dict[Any, int] = {}
    indices = pending_indices(state.done)
    used = len(state.done)

    def stop_reason() -> str:
        if report.accepted >= plan.n:
            return "target"
        if used >= plan.max_attempts:
            return "max_attempts"
        if plan.token_budget is not None and report.tokens >= plan.token_budget:
            return "token_budget"
        return ""

    while True:
        while len(inflight) < plan.concurrency and not stop_reason():
            idx = next(indices)
            future = submit(idx)
            inflight[future] = idx
            future.add_done_callback(finished.put)
            used += 1
            report.started += 1
        if not inflight:
            report.stopped_by = stop_reason()
            return report
        future = finished.get()
        idx = inflight.pop(future)
        try:
            outcome = future.result()
        except Exception as exc:  # a bug in one candidate must not end the build
            report.failed += 1
            report.errors.append(f"candidate {idx}: {type(exc).__name__}: {exc}")
            continue
        status = _outcome_status(outcome)
        report.accepted += status == "accepted"
        report.rejected += status == "rejected"
        report.tokens += _outcome_tokens(outcome)
        if on_outcome is not None:
            on_outcome(idx, outcome)


def _generation_context(plan: BuildPlan, store: Store, gateway: Any) -> Any:
    from factory.generate import make_context
    from factory.index.fixed import open_index

    index = open_index(plan.index_dir, store=store, settings=plan.settings)
    return make_context(store, index, gateway, plan.settings, lang=plan.lang, run_id=plan.run_id, seed=plan.settings.seed)


def compact(store: Store) -> None:
    """Merge the small segments the candidates flush at every step, so that readers (the
    live view, `factory rejected`, the export) keep fast; safe while writers run."""
    for table in COMPACT_TABLES:
        store.compact(table)


# Objects a subflow needs but that cannot be flow parameters (parameters go to the
# Prefect API as JSON): the plan and the generation context, by run id, this process only.
_LIVE: dict[str, tuple[BuildPlan, Any]] = {}


@flow(name="generate-candidates", persist_result=False, validate_parameters=False)
def generate_candidates(run_id: str, n: int, concurrency: int, max_attempts: int, token_budget: int | None) -> LoopReport:
    """One Prefect task per candidate index, on this subflow's task runner."""
    plan, ctx = _LIVE[run_id]
    logger = get_run_logger()
    state = RunState.read(plan.open_store(), run_id)
    if state.done:
        logger.info("resuming %s: %d candidates finished earlier, %d accepted", run_id, len(state.done), state.accepted)

    def submit(idx: int) -> Any:
        return candidate.submit(idx, quote(ctx))

    finished = 0

    def log(idx: int, outcome: Any) -> None:
        nonlocal finished
        logger.info("candidate %d: %s", idx, _outcome_status(outcome) or "?")
        finished += 1
        if finished % COMPACT_EVERY == 0:
            compact(plan.open_store())

    report = run_candidates(submit, state, plan, on_outcome=log)
    for error in report.errors[:5]:
        logger.warning(error)
    logger.info("generation stopped (%s): %d accepted, %d rejected, %d failed, %d tokens",
                report.stopped_by, report.accepted, report.rejected, report.failed, report.tokens)
    return report


# ------------------------------------------------------------------------ flow
@flow(name="build-benchmark", persist_result=False)
def build_benchmark(
    lang: str,
    corpus: str,
    n: int | None,
    llm_spec: str | None,
    out: str,
    store: str | None = None,
    config: str | None = None,
    seed: int | None = None,
    profile: str | None = None,
    task_runner: str = "threads",
    concurrency: int | None = None,
    max_attempts: int | None = None,
    token_budget: int | None = None,
) -> dict[str, Any]:
    """Ingest, index, generate until N accepted (or a budget is spent), export."""
    from factory.ingest import record_run
    from factory.llm.registry import make_gateway

    started = time.perf_counter()
    plan = resolve_build(lang, corpus, n, llm_spec, out, store, config, seed, profile, task_runner,
                         concurrency, max_attempts, token_budget)
    plan.out.mkdir(parents=True, exist_ok=True)
    db = plan.open_store()
    record_run(db, plan.run_id, "build-benchmark", plan.settings)
    (plan.out / "build.json").write_text(json.dumps(
        {"run_id": plan.run_id, "params": plan.params, "started_at": datetime.now(timezone.utc).isoformat()},
        indent=2, sort_keys=True) + "\n", encoding="utf-8")

    ingest_corpus(quote(plan))
    fixed_index(quote(plan))
    gateway = make_gateway(plan.settings.llm.spec, plan.settings.llm, db, run_id=plan.run_id)
    ctx = None
    try:
        ctx = _generation_context(plan, db, gateway)
        runner = make_task_runner(plan.task_runner, plan.concurrency)
        _LIVE[plan.run_id] = (plan, ctx)
        report = generate_candidates.with_options(task_runner=runner)(
            plan.run_id, plan.n, plan.concurrency, plan.max_attempts, plan.token_budget
        )
    finally:
        _LIVE.pop(plan.run_id, None)
        if ctx is not None:
            ctx.writer.close()
        gateway.close()
    notes = []
    if report.failed:
        notes.append(f"{report.failed} candidates failed with an error (see the flow log); first: {report.errors[0]}")
    if report.stopped_by != "target":
        notes.append(f"stopped before the target: {report.stopped_by.replace('_', ' ')} reached")
    compact(db)
    summary = export(quote(plan), gateway.stats.total.cache_hits, notes)
    totals = dict((r["status"], r["n"]) for r in db.query(
        "SELECT status, count(*) AS n FROM candidates WHERE run_id = ? GROUP BY status", [plan.run_id]
    ))
    finished = totals.get("accepted", 0) + totals.get("rejected", 0)
    return {
        "accepted_total": totals.get("accepted", 0),
        "rejected_total": totals.get("rejected", 0),
        "acceptance": round(totals.get("accepted", 0) / finished, 4) if finished else None,
        "run_id": plan.run_id,
        "out": str(plan.out),
        "accepted": summary["tasks"],
        "candidates_started": report.started,
        "candidates_resumed": report.resumed_done,
        "rejected": report.rejected,
        "failed": report.failed,
        "stopped_by": report.stopped_by,
        "tokens": report.tokens,
        "cached_calls": gateway.stats.total.cache_hits,
        "wall_s": round(time.perf_counter() - started, 1),
    }
