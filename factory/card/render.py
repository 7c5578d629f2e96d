"""The benchmark card: what was built, how, from what, and what the validators did.

The card is written once as Markdown and rendered to HTML with markdown-it (raw HTML
off: questions and chunk text are untrusted corpus-derived text).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from pydantic import BaseModel, ConfigDict, Field

from factory.card import plots



class CardData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    lang: str
    run_id: str
    built_at: str
    target_n: int
    llm_spec: str
    llm_models: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    llm_cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: dict[str, Any] = Field(default_factory=dict, description="factory.cost.RunCost.as_dict() of the run")
    corpus_path: str = ""
    corpus_documents: int = 0
    corpus_chunks: int = 0
    corpus_license: str = ""
    corpus_attribution: str = ""
    profile: str = "full"
    profile_overrides: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    funnel: list[dict[str, Any]] = Field(default_factory=list)
    candidates: dict[str, int] = Field(default_factory=dict, description="started, accepted, rejected, in_flight")
    rejected_by: dict[str, int] = Field(default_factory=dict, description="validator or stage -> rejected candidates")
    attempted_cells: dict[str, int] = Field(default_factory=dict, description="cell key -> candidates drawn")
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    mechanics: list[str] = Field(default_factory=list)
    answer_types: list[str] = Field(default_factory=list)
    examples_per_mechanic: int = 2
    notes: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)


def _cell_parts(cell: str) -> tuple[str, str, str]:
    parts = (cell or "").split("/")
    return (parts + ["?", "?", "?"])[:3] if len(parts) != 3 else (parts[0], parts[1], parts[2])


_MD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\|*_<>`[]#"})


def _esc(text: Any) -> str:
    """Text safe inside a Markdown table cell or list item: one line, Markdown syntax escaped."""
    return " ".join(str(text).split()).translate(_MD_ESCAPES)


def _code(text: Any) -> str:
    """An inline code span (outside tables): backticks cannot end it early."""
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def make_plots(data: CardData, out_dir: Path) -> dict[str, Path]:
    folder = out_dir / "plots"
    accepted: Counter[tuple[str, str]] = Counter()
    attempted: Counter[tuple[str, str]] = Counter()
    for task in data.tasks:
        accepted[(task["mechanic"], task["answer_type"])] += 1
    for cell, count in data.attempted_cells.items():
        mechanic, _form, answer_type = _cell_parts(cell)
        attempted[(mechanic, answer_type)] += count
    mechanics = list(dict.fromkeys(data.mechanics + sorted({m for m, _ in accepted | attempted})))
    answer_types = list(dict.fromkeys(data.answer_types + sorted({t for _, t in accepted | attempted})))
    out = {
        "coverage": plots.coverage_heatmap(mechanics, answer_types, accepted, attempted, folder / "coverage.png"),
        "funnel": plots.validator_funnel(data.funnel, folder / "funnel.png"),
        "revisions": plots.histogram(
            [t.get("revisions") or 0 for t in data.tasks], "Revisions per accepted task", "revisions",
            folder / "revisions.png", integer=True,
        ),
    }
    for key, (title, values) in difficulty_series(data.tasks).items():
        integer = all(float(v).is_integer() for v in values)
        out[f"difficulty_{key}"] = plots.histogram(values, f"Difficulty: {title}", title,
                                                   folder / f"difficulty_{key}.png", integer=integer)
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def difficulty_series(tasks: list[dict[str, Any]]) -> dict[str, tuple[str, list[float]]]:
    """Per-task difficulty figures worth a histogram: support size always; the search
    agent's searches, rounds and recall, and the solvability share, where recorded."""
    series: dict[str, tuple[str, list[float]]] = {
        "support_size": ("support chunks per task", [float(len(t.get("support_chunk_ids") or [])) for t in tasks]),
    }
    picks = {
        "agent_searches": ("agent searches", lambda d: (d.get("agent") or {}).get("searches")),
        "agent_rounds": ("agent rounds", lambda d: (d.get("agent") or {}).get("rounds")),
        "agent_recall": ("agent recall@10", lambda d: (d.get("agent") or {}).get("recall")),
        "solvability": ("share of solvability samples solved", lambda d: (
            (d.get("solvability") or {}).get("solved", 0) / (d.get("solvability") or {}).get("samples")
            if (d.get("solvability") or {}).get("samples") else None)),
    }
    for key, (title, pick) in picks.items():
        values = [v for v in (_number(pick(t.get("difficulty") or {})) for t in tasks) if v is not None]
        if values:
            series[key] = (title, values)
    return series


def render_markdown(data: CardData, plot_paths: dict[str, Path], out_dir: Path) -> str:
    rel = {k: p.relative_to(out_dir).as_posix() for k, p in plot_paths.items()}
    started = data.candidates.get("started", 0)
    accepted = len(data.tasks)
    finished = data.candidates.get("accepted", 0) + data.candidates.get("rejected", 0)
    accepted_all = data.candidates.get("accepted", accepted)
    rate = f"{accepted_all / finished:.1%}" if finished else "n/a"
    lines = [
        f"# Benchmark card: {_esc(data.name)}",
        "",
        f"Built {data.built_at} by the search-task factory (run `{data.run_id}`).",
        "",
        "| | |",
        "|---|---|",
        f"| language | {data.lang} |",
        f"| accepted tasks | {accepted} (target {data.target_n})"
        + (f"; {accepted_all} accepted in all, the first {accepted} by candidate order exported" if accepted_all > accepted else "")
        + " |",
        f"| candidates | {started} started, {finished} finished, {data.candidates.get('rejected', 0)} rejected |",
        f"| acceptance rate | {rate} of finished candidates |",
        f"| LLM | {_esc(data.llm_spec)} ({_esc(', '.join(data.llm_models) or 'no calls recorded')}) |",
        f"| LLM calls | {data.llm_calls} ({data.llm_cached_calls} served from cache), "
        f"{data.tokens_in:,} tokens in, {data.tokens_out:,} out |",
        f"| corpus | {data.corpus_documents:,} documents, {data.corpus_chunks:,} chunks |",
        f"| profile | {data.profile} |",
        "",
    ]
    if accepted == 0:
        lines += ["**No task passed every validator.** This is reported as is: validators are never relaxed.", ""]
    if data.profile_overrides:
        shown = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in sorted(data.profile_overrides.items()))
        lines += [
            f"The `{data.profile}` profile changed only the difficulty checker's cost: {shown}. "
            "Every validator ran with the same thresholds as the full profile (profiles may not change them).",
            "",
        ]
    for note in data.notes:
        lines.append(f"- {_esc(note)}")
    if data.notes:
        lines.append("")

    lines += ["## Validator funnel", "", f"![validator funnel]({rel['funnel']})", ""]
    lines += ["| step | validator | seen | rejected | skipped | mean s |", "|---:|---|---:|---:|---:|---:|"]
    for row in data.funnel:
        mean = row.get("mean_s")
        lines.append(
            f"| {row.get('step', '')} | {_esc(row['validator'])} | {row.get('seen') or 0} | {row.get('rejected') or 0} "
            f"| {row.get('skipped') or 0} | {'' if mean is None else f'{mean:.2f}'} |"
        )
    if data.rejected_by:
        lines += ["", "Candidates rejected, by where they stopped: " + ", ".join(
            f"{_esc(k)} {v}" for k, v in sorted(data.rejected_by.items(), key=lambda kv: -kv[1])
        ) + "."]
    lines += cost_lines(data.cost)
    lines += ["", "## Taxonomy coverage", "", f"![taxonomy coverage]({rel['coverage']})", ""]
    mechanic_counts = Counter(t["mechanic"] for t in data.tasks)
    if mechanic_counts:
        lines.append("Accepted per mechanic: " + ", ".join(f"{_esc(m)} {c}" for m, c in sorted(mechanic_counts.items())) + ".")
        lines.append("")
    lines += ["## Difficulty and revisions", ""]
    for key, path in rel.items():
        if key.startswith("difficulty_") or key == "revisions":
            lines.append(f"![{key}]({path})")
    lines += ["", "## Examples per mechanic", ""]
    by_mechanic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for task in data.tasks:
        by_mechanic[task["mechanic"]].append(task)
    if not by_mechanic:
        lines += ["No accepted tasks to show.", ""]
    for mechanic in sorted(by_mechanic):
        lines += [f"### {_esc(mechanic)}", ""]
        for task in by_mechanic[mechanic][: data.examples_per_mechanic]:
            support = ", ".join(_code(c) for c in task.get("support_chunk_ids") or [])
            lines += [
                f"- **Q:** {_esc(task['question'])}",
                f"  - **A:** {_esc(task['answer'])}" + (
                    f" (also: {_esc('; '.join(task.get('answer_aliases') or []))})" if task.get("answer_aliases") else ""
                ),
                f"  - cell {_code(task['cell'])}, support {support}, revisions {task.get('revisions') or 0}",
            ]
        lines.append("")
    lines += [
        "## Corpus, licence and attribution",
        "",
        f"Source: {_esc(data.corpus_path) or 'not given'}.",
        "",
        f"Licence: {_esc(data.corpus_license) or 'not stated by the user (see LICENSE)'}.",
        "",
    ]
    if data.corpus_attribution:
        quoted = [f"> {_esc(line)}" if line.strip() else ">" for line in data.corpus_attribution.splitlines()]
        lines += ["Attribution:", "", *quoted, ""]
    lines += [
        "## Files",
        "",
        *[f"- `{f}`" for f in data.files],
        "",
        "## Resolved settings",
        "",
        "```json",
        json.dumps(data.settings, indent=2, sort_keys=True, ensure_ascii=False),
        "```",
        "",
    ]
    return "\n".join(lines)


def _count(value: Any) -> str:
    return "–" if value is None else f"{value:,.0f}"


def cost_lines(cost: dict[str, Any]) -> list[str]:
    """The cost section: tokens per accepted task by stage, and how early rejections came."""
    if not cost or not cost.get("stages"):
        return []
    accepted = cost.get("accepted") or 0
    lines = ["", "## Cost per accepted task", "",
             f"Tokens the run spent, over its {accepted} accepted tasks (what rejected candidates spent is part "
             "of the price; thinking tokens are part of tokens out):", "",
             "| stage | calls | tokens in | tokens out | thinking | truncated | in per task | out per task |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in [*cost["stages"], {"label": "**all stages**", **cost.get("total", {})}]:
        lines.append(
            f"| {_esc(row['label']) if not row['label'].startswith('**') else row['label']} | {_count(row.get('calls'))} "
            f"| {_count(row.get('tokens_in'))} | {_count(row.get('tokens_out'))} | {_count(row.get('thinking_tokens'))} "
            f"| {_count(row.get('truncated'))} | {_count(row.get('tokens_in_per_accepted'))} "
            f"| {_count(row.get('tokens_out_per_accepted'))} |")
    rejected, early = cost.get("rejected") or 0, cost.get("rejected_before_agent") or 0
    if rejected:
        lines += ["", f"Rejections decided before any agent run: {early} of {rejected} ({early / rejected:.0%})."]
    return lines


HTML_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: .2rem .5rem; }}
img {{ max-width: 100%; }} pre {{ background: #f6f6f6; padding: .6rem; overflow-x: auto; }}
</style></head><body>
{body}
</body></html>
"""


def render_html(markdown: str, data: CardData) -> str:
    from html import escape

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return HTML_PAGE.format(lang=escape(data.lang), title=escape(f"Benchmark card: {data.name}"), body=body)


def write_card(data: CardData, out_dir: Path) -> list[Path]:
    """Write card.md, card.html and plots/*.png into out_dir; returns the files written."""
    out_dir = Path(out_dir)
    plot_paths = make_plots(data, out_dir)
    markdown = render_markdown(data, plot_paths, out_dir)
    (out_dir / "card.md").write_text(markdown, encoding="utf-8")
    (out_dir / "card.html").write_text(render_html(markdown, data), encoding="utf-8")
    return [out_dir / "card.md", out_dir / "card.html", *plot_paths.values()]
