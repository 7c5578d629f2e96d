"""`factory audit`: the gauntlet's verdicts on every question of an outside benchmark.

Unlike the generation loop, an audit runs every validator that applies on every
question (``audit.stop_at_first_flag`` restores the gauntlet's early stop, which
saves LLM calls), because the point is the full picture: which questions one broad
query answers, which leak their answer, which a model knows without evidence.
A validator that cannot run says why (a skipped verdict with its reason).

Rows land in the store under OUT (``audit_runs``, ``audit_questions``,
``audit_verdicts``), and OUT gets ``audit.jsonl``, ``summary.json`` and the card.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from factory.audit.checks import (
    ALL_VALIDATORS,
    AuditSchema,
    AuditShortcut,
    answer_chunk_ids,
    not_applicable,
    to_draft,
)
from factory.audit.inputs import AuditInput, load_audit_input
from factory.audit.prepare import IndexInfo, load_into_store, open_audit_index
from factory.audit.question import QuestionAudit
from factory.capacity import resolve_concurrency
from factory.clock import utc_now
from factory.errors import FactoryError
from factory.records import Draft, Verdict
from factory.settings import Settings
from factory.validate.base import StoreChunks, ValidationContext, Validator, store_entity_names, timed_check
from factory.validate.gauntlet import VALIDATORS


class AuditError(FactoryError):
    pass


@dataclass
class AuditResult:
    audit_id: str
    out: Path
    summary: dict[str, Any]
    questions: list[QuestionAudit]
    files: list[str]


def _validators(order: list[str], answer_chunks: Callable[[Draft], list[str]]) -> list[Validator]:
    out: list[Validator] = []
    for name in order:
        if name == "schema":
            out.append(AuditSchema())
        elif name == "shortcut":
            out.append(AuditShortcut(answer_chunks))
        else:
            out.append(VALIDATORS[name]())
    return out


def audit_question(item: QuestionAudit, validators: list[Validator], ctx: ValidationContext, *, selected: set[str],
                   llm: bool, agent: bool, stop_at_first_flag: bool) -> QuestionAudit:
    ctx = ctx.for_item(item.question.qid)
    stopped_by = None
    for validator in validators:
        if stopped_by and validator.name in selected:
            result = Verdict(ok=False, validator=validator.name, reason="after_flag", hard=False, skipped=True,
                             feedback=f"not run: {stopped_by} flagged the question first (stop at first flag)")
        else:
            result = not_applicable(validator.name, item.draft, llm=llm, agent=agent,
                                    selected=validator.name in selected)
            if result is None:
                result = timed_check(validator, item.draft, ctx)
        item.verdicts.append(result)
        if stop_at_first_flag and not stopped_by and QuestionAudit.status(result) == "flag":
            stopped_by = validator.name
    return item


def run_audit(
    benchmark: str | Path,
    out: str | Path,
    settings: Settings,
    *,
    lang: str | None = None,
    llm_spec: str | None = None,
    validators: list[str] | None = None,
    agent: bool = False,
    split: str | None = None,
    dense: str | None = "default",
    limit: int | None = None,
    llm: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """Audit the benchmark folder into ``out``; ``llm`` (an LLM or gateway) overrides ``llm_spec``."""
    from factory.audit.report import build_summary, write_outputs
    from factory.evaluate import detect_lang
    from factory.store.runs import new_run_id, record_run
    from factory.store import Store

    started = utc_now()
    t0 = time.perf_counter()
    selected = list(validators or settings.audit.validators)
    unknown = [v for v in selected if v not in ALL_VALIDATORS]
    if unknown:
        raise AuditError(f"unknown validator(s) {', '.join(unknown)}; known: {', '.join(ALL_VALIDATORS)}")
    data: AuditInput = load_audit_input(benchmark, split)
    if limit:
        data.questions = data.questions[:limit]
    lang = lang or detect_lang(p.text for p in data.passages[:200])
    if lang not in ("en", "ru"):
        raise AuditError(f"--lang must be en or ru, not {lang!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = Store(out / "store")
    audit_id = new_run_id("audit")
    record_run(store, audit_id, "audit", settings)
    load_into_store(data, store, lang, audit_id)
    index, index_info = open_audit_index(data, store, out, lang, settings, dense)

    gateway, owned = llm, False
    if gateway is None and llm_spec:
        from factory.llm.registry import make_gateway

        gateway, owned = make_gateway(llm_spec, settings, store, stage_default="audit", run_id=audit_id), True
    try:
        ctx = _context(settings, store, index, index_info, gateway, agent)
        items = _audit_all(data, ctx, settings, lang, set(selected), gateway is not None, agent, progress)
    finally:
        if owned:
            gateway.close()
    summary = build_summary(
        items, data, settings, audit_id=audit_id, lang=lang, index=index_info, order=list(ALL_VALIDATORS),
        selected=selected, llm=(llm_spec or getattr(gateway, "name", "") or "") if gateway is not None else "",
        agent=agent, elapsed_s=time.perf_counter() - t0,
    )
    stats = getattr(gateway, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        summary["llm_usage"] = stats.as_dict()
    _write_rows(store, audit_id, lang, items, summary, started, str(data.root), list(ALL_VALIDATORS))
    files = write_outputs(out, items, summary, settings.audit.worst_examples)
    return AuditResult(audit_id, out, summary, items, files)


def _context(settings: Settings, store: Any, index: Any, index_info: IndexInfo, gateway: Any,
             agent: bool) -> ValidationContext:
    difficulty = None
    validation = settings.validation.model_copy(update={"agent_run": bool(agent)})
    if agent and gateway is not None:
        from factory.agent.difficulty import DifficultyChecker

        difficulty = DifficultyChecker(index, gateway, settings, store)
    searchers = {kind: index.searcher(kind) for kind in index_info.searchers if kind in validation.shortcut_searchers}
    ctx = ValidationContext(settings=validation, chunks=StoreChunks(store), searchers=searchers, llm=gateway,
                            entity_names=store_entity_names(store), difficulty=difficulty)
    ctx.get_lexicon()  # once, before questions run in parallel
    return ctx


def _audit_all(data: AuditInput, ctx: ValidationContext, settings: Settings, lang: str, selected: set[str],
               llm: bool, agent: bool, progress: Callable[[int, int], None] | None) -> list[QuestionAudit]:
    texts = ctx.chunks.texts(sorted({c for q in data.questions for c in q.support}))
    items = []
    for q in data.questions:
        answer_chunks = answer_chunk_ids(q, settings.audit.answer_chunks, texts, lang)
        items.append(QuestionAudit(q, to_draft(q, lang, answer_chunks), answer_chunks))
    by_draft = {item.draft.draft_id: item.answer_chunks for item in items}
    chain = _validators(list(ALL_VALIDATORS), lambda d: by_draft.get(d.draft_id, []))
    done = [0]
    lock = threading.Lock()

    def one(item: QuestionAudit) -> QuestionAudit:
        audit_question(item, chain, ctx, selected=selected, llm=llm, agent=agent,
                       stop_at_first_flag=settings.audit.stop_at_first_flag)
        with lock:
            done[0] += 1
            if progress is not None:
                progress(done[0], len(items))
        return item

    # questions in parallel: as many as the gateway lets calls out (its resolved llm.concurrency)
    workers = (getattr(ctx.llm, "concurrency", None)
               or resolve_concurrency(settings.llm, settings.generate).llm_calls) if llm else 1
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, items))


def _write_rows(store: Any, audit_id: str, lang: str, items: list[QuestionAudit], summary: dict[str, Any],
                started: datetime, benchmark: str, order: list[str]) -> None:
    with store.writer(f"audit-{audit_id}", flush_rows=1 << 40, flush_seconds=float("inf")) as writer:
        for item in items:
            record = item.record()
            writer.append("audit_questions", [{
                "audit_id": audit_id, "lang": lang,
                **{k: record[k] for k in ("qid", "question", "answer", "answers", "support_chunk_ids",
                                          "answer_chunk_ids", "bridge_entities", "flagged", "flagged_by",
                                          "skipped", "errors", "best_rank")},
            }])
            writer.append("audit_verdicts", [
                {"audit_id": audit_id, "qid": item.question.qid, "step": step, "validator": v.validator,
                 "status": QuestionAudit.status(v), "ok": v.ok, "hard": v.hard, "skipped": v.skipped,
                 "reason": v.reason, "feedback": v.feedback, "figures": v.figures, "elapsed_s": v.elapsed_s}
                for step, v in enumerate(item.verdicts)
            ])
        writer.flush("audit_verdicts")
        writer.flush("audit_questions")
        writer.append("audit_runs", [{
            "audit_id": audit_id, "benchmark": benchmark, "lang": lang, "llm": summary.get("llm") or "",
            "validators": order, "questions": len(items), "flagged": summary["overall"]["flagged"],
            "summary": json.loads(json.dumps(summary, default=str)), "started_at": started,
            "finished_at": utc_now(),
        }])
        writer.flush("audit_runs")
