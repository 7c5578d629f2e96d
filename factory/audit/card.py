"""The audit card: what was audited, the share flagged per validator, the funnel, the
worst examples. Markdown first, rendered to HTML with raw HTML off (questions and
passages are untrusted text)."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from factory.audit.question import QuestionAudit, severity

_MD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\|*_<>`[]#"})
FEEDBACK_CHARS = 400
CLEAN_EXAMPLES = 5


def _esc(text: Any) -> str:
    return " ".join(str(text).split()).translate(_MD_ESCAPES)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _example(item: QuestionAudit) -> list[str]:
    q = item.question
    lines = [f"**{_esc(q.qid)}**: {_esc(q.text)}", ""]
    lines.append(f"- answer: {_esc(q.answer) if q.answer else '(none given)'}; support: "
                 f"{_esc(', '.join(item.draft.support_chunk_ids))}")
    rank = item.best_rank()
    if rank is not None:
        lines.append(f"- best rank of a gold passage for the question as one query: {rank}")
    for v in item.verdicts:
        status = item.status(v)
        if status in ("flag", "error"):
            text = v.feedback[:FEEDBACK_CHARS] + ("..." if len(v.feedback) > FEEDBACK_CHARS else "")
            lines.append(f"- {status} **{_esc(v.validator)}** ({_esc(v.reason)}): {_esc(text)}")
    lines.append("")
    return lines


def render_markdown(items: list[QuestionAudit], summary: dict[str, Any], worst: int, plot: str | None) -> str:
    s = summary
    overall = s["overall"]
    name = Path(s["benchmark"]).name or s["benchmark"]
    lines = [
        f"# Audit card: {_esc(name)}",
        "",
        f"Audited {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC (audit id `{s['audit_id']}`) by `factory audit`.",
        "",
        f"- benchmark: `{s['benchmark']}` (judgements: `{Path(s['qrels']).name}`), language {s['lang']}",
        f"- questions audited: {s['questions']} ({s['unjudged_queries']} without a positive judgement left out); "
        f"corpus passages: {s['corpus_passages']}",
        f"- index: {'the benchmark' + chr(39) + 's own' if s['index']['reused_from_benchmark'] else 'built for the audit'}"
        f" (`{s['index']['path']}`), searchers {', '.join(s['index']['searchers'])}"
        + (f", dense model {s['index']['dense_model']}" if s['index']['dense_model'] else ""),
        f"- LLM: {s['llm'] or 'none (LLM-based validators did not run)'}; search agent: {'yes' if s['agent'] else 'no'}",
        f"- answer chunks: rule `{s['answer_chunks_rule']}`; shortcut: top {s['shortcut']['k']}, "
        f"more than {s['shortcut']['hidden_share']} of the hidden passages (a passage whose title the question "
        f"names is a seed, every other one is hidden)",
        "",
        f"**{overall['flagged']} of {s['questions']} questions ({_pct(overall['share_flagged'])}) are flagged by at "
        f"least one validator**; {overall['clean']} passed every validator that ran"
        + (f"; {overall['no_validator_ran']} had no validator run" if overall["no_validator_ran"] else "") + ".",
        "",
        "## Share flagged per validator",
        "",
        "| validator | ran | flagged | share flagged | why flagged | not run (why) | errors |",
        "|---|---:|---:|---:|---|---|---:|",
    ]
    for name_, row in s["per_validator"].items():
        why = ", ".join(f"{_esc(r)} {c}" for r, c in row["flag_reasons"].items()) or "-"
        skip = ", ".join(f"{_esc(r)} {c}" for r, c in row["not_run_reasons"].items()) or "-"
        lines.append(f"| {name_} | {row['ran']} | {row['flagged']} | {_pct(row['share_flagged'])} | {why} | {skip} | "
                     f"{row['errors']} |")
    if s["broad_query_recall"]:
        lines += ["", "Broad-query recall@{k} (the whole question as one query): ".format(k=s["shortcut"]["k"])
                  + ", ".join(f"{name_} {value:.3f}" for name_, value in s["broad_query_recall"].items()) + "."]
    lines += ["", "## Funnel (gauntlet order: questions no earlier validator flagged)", "",
              "| validator | entered | ran | flagged | remaining |", "|---|---:|---:|---:|---:|"]
    for row in s["funnel"]:
        lines.append(f"| {row['validator']} | {row['entered']} | {row['ran']} | {row['flagged']} | {row['remaining']} |")
    if plot:
        lines += ["", f"![funnel]({plot})"]
    if s["notes"]:
        lines += ["", "## Notes", ""] + [f"- {_esc(note)}" for note in s["notes"]]
    flagged = sorted((i for i in items if i.flagged), key=severity)[:worst]
    if flagged:
        lines += ["", f"## Worst examples ({len(flagged)} most flagged)", ""]
        for item in flagged:
            lines += _example(item)
    clean = [i for i in items if not i.flagged and (i.names("pass"))][:CLEAN_EXAMPLES]
    if clean:
        lines += ["", "## Unflagged examples", ""]
        for item in clean:
            lines += _example(item)
    lines += ["", "## Files", "",
              "- `audit.jsonl`: one line per question with every validator's status, reason, feedback and figures",
              "- `summary.json`: the figures above",
              "- `store/`: the same rows in DuckDB (`audit_questions`, `audit_verdicts`, `audit_flags`, "
              "`audit_validator_summary`); open with `factory store catalog` or `Store(path).query(...)`", ""]
    return "\n".join(lines)


HTML_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ font-family: sans-serif; max-width: 60rem; margin: 2rem auto; line-height: 1.45; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: .2rem .5rem; }}
img {{ max-width: 100%; }}</style></head><body>
{body}
</body></html>
"""


def write_card(out: Path, items: list[QuestionAudit], summary: dict[str, Any], worst: int) -> list[str]:
    """card.md, card.html and plots/funnel.png; returns the paths written, relative to ``out``."""
    written: list[str] = []
    plot = None
    try:
        from factory.card.plots import validator_funnel

        rows = [{"validator": r["validator"], "seen": r["ran"], "rejected": r["flagged"],
                 "skipped": r["entered"] - r["ran"]} for r in summary["funnel"]]
        validator_funnel(rows, out / "plots" / "funnel.png")
        plot = "plots/funnel.png"
        written.append(plot)
    except ImportError:  # matplotlib missing: the card goes without its plot
        pass
    markdown = render_markdown(items, summary, worst, plot)
    (out / "card.md").write_text(markdown, encoding="utf-8")
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    html = HTML_PAGE.format(lang=escape(summary["lang"]), title=escape(f"Audit card: {summary['benchmark']}"), body=body)
    (out / "card.html").write_text(html, encoding="utf-8")
    return ["card.md", "card.html", *written]
