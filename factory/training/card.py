"""The training-data card (Markdown): pools, teacher episodes, sample distributions, the datamix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.training.datamix import MixReport


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _share(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else str(count)


def render_card(summary: Any, mixes: list[MixReport], episodes: list[Any]) -> str:
    lines = [
        "# Training data",
        "",
        f"Export `{summary.run_id}` written {summary.written_at}. Seed {summary.seed}.",
        "",
        "Files: " + ", ".join(f"`{f}`" for f in summary.files) + ".",
        "",
        "- `sft/train.jsonl`, `sft/train.parquet`: round-sliced agent trajectories after the datamix, OpenAI chat layout "
        "(`messages` with `tool_calls`, `tools`); assistant messages carry `weight` (0 = a turn the harness refused: "
        "mask it from the loss, the recovery after it keeps weight 1). In Parquet, `tools` and `state` are JSON text.",
        "- `sft/all.jsonl`: every round-sliced sample before the datamix.",
        "- `rl/train.jsonl`, `rl/train.parquet`: the RL pool (question, gold chunk ids, language, answer).",
        "- `pools.jsonl`: the pool of every task, and why excluded ones are out.",
        "",
        "## Pools",
        "",
    ]
    rows = []
    for lang, pools in sorted(summary.pools.items()):
        rows.append([lang, len(pools.sft), len(pools.rl), len(pools.excluded), len(pools.held), pools.new,
                     len(pools.newly_excluded)])
    lines += _table(["lang", "SFT", "RL", "excluded", "held back", "new this run", "newly excluded"], rows)
    lines += ["", f"Pools disjoint (no shared task, support set or near-duplicate question): "
                  f"**{'yes' if summary.disjoint else 'NO'}**."]
    for problem in summary.disjoint_problems[:10]:
        lines.append(f"- {problem}")
    if summary.excluded_by:
        lines += ["", "Excluded tasks by reason (benchmark tasks of the same corpus and their near-duplicates are "
                      "never trained on):", ""]
        lines += _table(["reason", "tasks"], [[k, v] for k, v in sorted(summary.excluded_by.items())])
    lines += ["", f"Benchmark tasks known to this store: {summary.benchmark_tasks}.", "", "## Teacher episodes", ""]
    if episodes:
        by_teacher: dict[str, list[Any]] = {}
        for link in episodes:
            by_teacher.setdefault(link.teacher, []).append(link)
        rows = []
        for teacher, links in sorted(by_teacher.items()):
            n = len(links)
            rows.append([
                f"`{teacher}`", n, f"{sum(l.recall for l in links) / n:.3f}",
                f"{sum(l.trajectory_recall for l in links) / n:.3f}", _share(sum(l.low_recall for l in links), n),
                f"{sum(l.rounds for l in links) / n:.2f}", sum(l.rejections for l in links),
                _share(sum(l.finalized_by == 'model' for l in links), n),
            ])
        lines += _table(["teacher", "episodes", "mean final recall", "mean trajectory recall", "low recall (kept, flagged)",
                         "rounds", "refused turns", "finalized by the model"], rows)
    else:
        lines.append("No teacher episodes yet.")
    lines += ["", f"This run: {summary.episodes_run} new episodes. Samples: {summary.samples_before} round slices, "
                  f"{summary.masked_turns} of {summary.assistant_turns} assistant turns masked (weight 0).", ""]
    lines += ["## Datamix", ""]
    for report in mixes:
        lines += [f"### {report.lang}", "",
                  f"{report.samples_before} samples before, {report.samples_after} after "
                  f"({report.distinct_after} distinct, {report.upsampled} extra copies). Total variation distance to the "
                  f"targets, mean over the dimensions: **{report.tv_before:.3f} before, {report.tv_after:.3f} after**.", ""]
        rows = []
        for dim in report.dimensions:
            cats = sorted(set(dim.target) | set(dim.before) | set(dim.after))
            nb, na = sum(dim.before.values()), sum(dim.after.values())
            for c in cats:
                rows.append([dim.dimension, c, f"{dim.target.get(c, 0):.2f}", _share(dim.before.get(c, 0), nb),
                             _share(dim.after.get(c, 0), na)])
            rows.append([f"**{dim.dimension}**", "TV distance", "", f"{dim.tv_before:.3f}", f"{dim.tv_after:.3f}"])
        lines += _table(["dimension", "value", "target", "before", "after"], rows)
        unreachable = [f"{d.dimension}: {', '.join(d.unreachable)}" for d in report.dimensions if d.unreachable]
        if unreachable:
            lines += ["", "Targets no sample can meet (no such samples): " + "; ".join(unreachable) + "."]
        lines.append("")
    if summary.notes:
        lines += ["## Notes", "", *[f"- {n}" for n in summary.notes], ""]
    return "\n".join(lines).rstrip() + "\n"


def write_card(path: Path, summary: Any, mixes: list[MixReport], episodes: list[Any]) -> Path:
    path.write_text(render_card(summary, mixes, episodes), encoding="utf-8")
    return path
