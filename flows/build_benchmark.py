"""`build_benchmark`: the whole factory as one Prefect flow, wiring factory/ functions.

    ingest (idempotent: an unchanged corpus writes nothing)
      -> the fixed index (reopened when it still matches the store, else rebuilt)
      -> candidates in flight on the task runner (threads or Dask), one task per
         candidate, drawn and settled in order (flows/generation.py: the loop of
         `factory generate`), until N tasks are accepted or the attempt or token
         budget is spent
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
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.utilities.annotations import quote

from factory.errors import FactoryError
from factory.generate import GenerationRun, RunLimits
from factory.llm.registry import require_language
from factory.params import BuildParams
from factory.settings import Settings, load_settings
from factory.store import Store
from factory.store.funnel import candidate_outcomes
from factory.store.runs import record_run
from flows.generation import TASK_OPTIONS, check_task_runner, prepare, run_generation_step


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
    limits: RunLimits
    task_runner: str
    params: dict[str, Any] = field(default_factory=dict)  # BuildParams as resolved, for build.json and the card

    def open_store(self) -> Store:
        return Store(self.store_path)

    @property
    def n(self) -> int:
        return self.settings.build.n


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


def resolve_build(params: BuildParams) -> BuildPlan:
    """Settings (file < environment < profile < flags) and the run's identity."""
    if params.lang not in {"en", "ru"}:
        raise BuildError(f"--lang must be en or ru, got {params.lang!r}")
    check_task_runner(params.task_runner)
    corpus, out = Path(params.corpus), Path(params.out)
    if not corpus.exists():
        raise BuildError(f"{corpus}: corpus not found")
    flags: dict[str, Any] = {
        "lang": params.lang,
        "seed": params.seed,
        "llm.spec": params.llm_spec,
        "build.n": params.n,
        "build.profile": params.profile,
        "build.max_attempts": params.max_attempts,
        "build.token_budget": params.token_budget,
        "generate.concurrency": params.concurrency,
    }
    config_path = Path(params.config) if params.config else None
    first = load_settings(config_path, **flags)
    overrides = first.build.overrides(first.build.profile)
    settings = load_settings(config_path, **{**overrides, **{k: v for k, v in flags.items() if v is not None}})
    require_language(settings.llm.spec, params.lang)
    store_path = Path(params.store) if params.store else out / "store"
    build = settings.build
    limits = RunLimits.from_settings(settings, n=build.n, max_attempts=build.max_attempts,
                                     token_budget=build.token_budget)
    return BuildPlan(
        run_id=run_id_for(params.lang, corpus, settings.llm.spec, settings.seed, out, build.profile),
        lang=params.lang,
        corpus=corpus,
        out=out,
        store_path=store_path,
        index_dir=store_path / f"index-{params.lang}",
        settings=settings,
        limits=limits,
        task_runner=params.task_runner,
        params=params.model_copy(update={
            "n": limits.n, "llm_spec": settings.llm.spec, "store": str(store_path), "config": str(config_path)
            if config_path else None, "seed": settings.seed, "profile": build.profile,
            "concurrency": limits.concurrency, "max_attempts": limits.max_attempts, "token_budget": limits.token_budget,
        }).model_dump(),
    )


# ----------------------------------------------------------------------- tasks
@task(name="export", **TASK_OPTIONS)
def export(plan: BuildPlan, cached_calls: int, notes: list[str]) -> dict[str, Any]:
    from factory.export import export_benchmark

    summary = export_benchmark(
        plan.open_store(), plan.index_dir, plan.out, plan.run_id, plan.settings, lang=plan.lang,
        corpus_path=str(plan.corpus), params=plan.params, cached_calls=cached_calls, notes=notes, limit=plan.n,
    )
    return summary.model_dump()


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
    params = BuildParams(**locals())  # the signature is BuildParams' fields (tests/flows/test_params.py)
    started = time.perf_counter()
    plan = resolve_build(params)
    plan.out.mkdir(parents=True, exist_ok=True)
    db = plan.open_store()
    record_run(db, plan.run_id, "build-benchmark", plan.settings)
    (plan.out / "build.json").write_text(json.dumps(
        {"run_id": plan.run_id, "params": plan.params, "started_at": datetime.now(timezone.utc).isoformat()},
        indent=2, sort_keys=True) + "\n", encoding="utf-8")

    prepare(str(plan.corpus), str(plan.store_path), str(plan.index_dir), plan.lang, plan.settings)
    run = GenerationRun(store=str(plan.store_path), index_dir=str(plan.index_dir), settings=plan.settings,
                        lang=plan.lang, run_id=plan.run_id, seed=plan.settings.seed, limits=plan.limits)
    report = run_generation_step(run, plan.task_runner)
    notes = []
    if report.failed:
        notes.append(f"{report.failed} candidates failed with an error (see the flow log); first: {report.errors[0]}")
    if report.stopped_by != "target":
        notes.append(f"stopped before the target: {report.stopped_by.replace('_', ' ')} reached")
    summary = export(quote(plan), report.cached_calls, notes)
    totals = candidate_outcomes(db, plan.run_id)
    return {
        "accepted_total": totals["accepted"],
        "rejected_total": totals["rejected"],
        "acceptance": totals["acceptance_rate"] if totals["candidates"] else None,
        "run_id": plan.run_id,
        "out": str(plan.out),
        "accepted": summary["tasks"],
        "candidates_started": report.started,
        "candidates_resumed": report.resumed_done,
        "rejected": report.rejected,
        "failed": report.failed,
        "stopped_by": report.stopped_by,
        "tokens": report.tokens_total,
        "cached_calls": report.cached_calls,
        "wall_s": round(time.perf_counter() - started, 1),
    }
