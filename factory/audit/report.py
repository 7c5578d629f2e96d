"""The audit's outputs: audit.jsonl, summary.json and the card (card.md, card.html, plots/).

Shares are over the questions a validator *ran* on (passed or flagged): a skipped
validator or a failed LLM call is neither a pass nor a flag, and is counted apart with
its reason. The funnel takes the validators in gauntlet order and keeps the questions
no earlier validator flagged. Broad-query recall@k per searcher is read back from the
shortcut check (the share of each question's support in the question's own top k),
the same figure `factory eval` reports for that searcher on the folder.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from factory.audit.inputs import AuditInput
    from factory.audit.prepare import IndexInfo
    from factory.audit.question import QuestionAudit
    from factory.settings import Settings


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def build_summary(items: list["QuestionAudit"], data: "AuditInput", settings: "Settings", *, audit_id: str, lang: str,
                  index: "IndexInfo", order: list[str], selected: list[str], llm: str, agent: bool,
                  elapsed_s: float) -> dict[str, Any]:
    n = len(items)
    per: dict[str, dict[str, Any]] = {}
    for name in order:
        statuses = Counter()
        reasons: Counter[str] = Counter()
        skip_reasons: Counter[str] = Counter()
        seconds = 0.0
        for item in items:
            v = next((v for v in item.verdicts if v.validator == name), None)
            if v is None:
                continue
            status = item.status(v)
            statuses[status] += 1
            if status == "flag":
                reasons[v.reason] += 1
            elif status in ("skip", "error"):
                skip_reasons[v.reason] += 1
            if status in ("pass", "flag"):
                seconds += v.elapsed_s
        ran = statuses["pass"] + statuses["flag"]
        per[name] = {
            "ran": ran, "flagged": statuses["flag"], "passed": statuses["pass"], "skipped": statuses["skip"],
            "errors": statuses["error"], "share_flagged": _share(statuses["flag"], ran),
            "flag_reasons": dict(reasons.most_common()), "not_run_reasons": dict(skip_reasons.most_common()),
            "mean_s": round(seconds / ran, 4) if ran else None,
        }
    funnel = []
    remaining = list(items)
    for name in order:
        entered = len(remaining)
        flagged_here = [i for i in remaining if name in i.names("flag")]
        ran = sum(1 for i in remaining if any(v.validator == name and i.status(v) in ("pass", "flag") for v in i.verdicts))
        remaining = [i for i in remaining if i not in flagged_here]
        funnel.append({"validator": name, "entered": entered, "ran": ran, "flagged": len(flagged_here),
                       "remaining": len(remaining)})
    flagged = sum(1 for i in items if i.flagged)
    ran_any = [i for i in items if i.names("pass") or i.names("flag")]
    support_sizes = Counter(len(i.draft.support_chunk_ids) for i in items)
    notes = list(data.notes) + list(index.notes)
    for name in order:
        row = per[name]
        if row["ran"] == 0:
            why = ", ".join(f"{r} ({c})" for r, c in row["not_run_reasons"].items()) or "no verdicts"
            notes.append(f"{name} did not run on any question: {why}; a validator that did not run is no pass")
    return {
        "audit_id": audit_id,
        "benchmark": str(data.root),
        "qrels": str(data.qrels_path),
        "lang": lang,
        "questions": n,
        "corpus_passages": len(data.passages),
        "unjudged_queries": data.unjudged_queries,
        "from_factory_export": data.has_tasks,
        "index": {"path": index.path, "reused_from_benchmark": index.reused, "searchers": index.searchers,
                  "dense_model": index.dense_model},
        "llm": llm,
        "agent": agent,
        "validators": order,
        "selected": selected,
        "answer_chunks_rule": settings.audit.answer_chunks,
        "shortcut": {"k": settings.validation.shortcut_k, "hidden_share": settings.validation.shortcut_hidden_share},
        "per_validator": per,
        "overall": {
            "flagged": flagged, "share_flagged": _share(flagged, n),
            "clean": sum(1 for i in ran_any if not i.flagged), "with_errors": sum(1 for i in items if i.names("error")),
            "no_validator_ran": n - len(ran_any),
        },
        "funnel": funnel,
        "broad_query_recall": broad_query_recall(items, settings.validation.shortcut_k),
        "support_sizes": {str(k): v for k, v in sorted(support_sizes.items())},
        "questions_with_answer": sum(1 for i in items if i.question.answers),
        "questions_with_answer_chunk": sum(1 for i in items if i.answer_chunks),
        "notes": notes,
        "elapsed_s": round(elapsed_s, 2),
    }


def broad_query_recall(items: list["QuestionAudit"], k: int) -> dict[str, float]:
    """Mean share of each question's support found in its own top k, per searcher."""
    sums: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for item in items:
        v = next((v for v in item.verdicts if v.validator == "shortcut" and not v.skipped), None)
        if v is None or not v.figures.get("support"):
            continue
        for name, row in (v.figures.get("searchers") or {}).items():
            sums[name] += row.get("support_in_top", 0) / v.figures["support"]
            counts[name] += 1
    return {name: round(sums[name] / counts[name], 4) for name in counts}


# ------------------------------------------------------------------ files
def write_outputs(out: Path, items: list["QuestionAudit"], summary: dict[str, Any], worst: int) -> list[str]:
    with open(out / "audit.jsonl", "w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item.record(), ensure_ascii=False, default=str) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n",
                                      encoding="utf-8")
    from factory.audit.card import write_card

    written = write_card(out, items, summary, worst)
    return ["audit.jsonl", "summary.json", *written]
