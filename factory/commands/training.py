"""`factory export-training`: SFT and RL pools, teacher trajectories sliced by round, the datamix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

out = Console(soft_wrap=True)


def export_training_command(
    store: Path = typer.Option(..., "--store", help="store folder holding accepted tasks"),
    out_dir: Path = typer.Option(..., "--out", help="folder for sft/, rl/, pools.jsonl, card.md"),
    teacher: Optional[str] = typer.Option(None, "--teacher", help="LLM spec of the teacher agent (none: no new episodes)"),
    index: Optional[Path] = typer.Option(None, "--index", help="fixed index the teacher searches (default: a BM25 "
                                                               "index built in OUT/index/LANG)"),
    exclude_benchmark: List[Path] = typer.Option([], "--exclude-benchmark", help="benchmark folder whose tasks (and "
                                                                                 "their near-duplicates) are never trained on; repeat"),
    sft_share: Optional[float] = typer.Option(None, "--sft-share", min=0.0, max=1.0, help="share of new tasks for SFT"),
    seed: Optional[int] = typer.Option(None, "--seed", help="pool hash and datamix seed (default: settings)"),
    lang: List[str] = typer.Option([], "--lang", help="only these languages; repeat"),
    episodes: Optional[int] = typer.Option(None, "--episodes-per-task", min=1, help="teacher episodes per SFT task"),
    max_tasks: Optional[int] = typer.Option(None, "--max-teacher-tasks", min=0, help="SFT tasks the teacher runs on now"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON line"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Write training data: disjoint SFT/RL pools, round-sliced teacher episodes, a balanced datamix, a card."""
    from factory.settings import load_settings
    from factory.store import Store
    from factory.training.export import export_training

    settings = load_settings(config, **{"seed": seed, "training.sft_share": sft_share, "training.teacher": teacher,
                                        "training.episodes_per_task": episodes, "training.max_teacher_tasks": max_tasks})
    the_store = Store(store, create=False)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=out, transient=True, disable=as_json) as bar:
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        summary = export_training(the_store, out_dir, settings, index_dir=index, exclude_benchmarks=exclude_benchmark,
                                  langs=lang or None, progress=progress)
    if as_json:
        out.print(json.dumps(summary.model_dump(mode="json"), ensure_ascii=False), highlight=False)
        return
    table = Table(title=f"training data in {out_dir}")
    for column in ("lang", "SFT tasks", "RL tasks", "excluded", "samples", "after datamix", "TV before", "TV after"):
        table.add_column(column, justify="left" if column == "lang" else "right")
    for name, pools in sorted(summary.pools.items()):
        counts = summary.samples.get(name, {})
        table.add_row(name, str(len(pools.sft)), str(len(pools.rl)), str(len(pools.excluded)),
                      str(counts.get("before", 0)), str(counts.get("after", 0)),
                      f"{summary.tv_before.get(name, 0):.3f}", f"{summary.tv_after.get(name, 0):.3f}")
    out.print(table)
    out.print(f"{summary.episodes_run} new teacher episodes ({summary.episodes} in all, {summary.low_recall_episodes} "
              f"low recall); {summary.samples_before} round samples, {summary.samples_after} after the datamix; "
              f"{summary.masked_turns} of {summary.assistant_turns} assistant turns masked; pools disjoint: "
              f"{'yes' if summary.disjoint else 'NO'}", highlight=False)
    for note in summary.notes:
        out.print(f"note: {note}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("export-training")(export_training_command)
