"""`factory audit`: the validator gauntlet on a benchmark the factory did not write."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from factory.settings import load_settings

console = Console()


def audit_command(
    benchmark: Path = typer.Option(..., "--benchmark", help="BEIR-style folder (corpus.jsonl, queries.jsonl, qrels) "
                                   "or a folder the factory exported"),
    out: Path = typer.Option(..., "--out", help="where audit.jsonl, summary.json, the card and the store go"),
    lang: Optional[str] = typer.Option(None, "--lang", help="en or ru (default: guessed from the corpus script)"),
    llm: Optional[str] = typer.Option(None, "--llm", help="LLM spec for closed-book, solvability, necessity, agent; "
                                      "without it those validators are skipped and say so"),
    validators: Optional[List[str]] = typer.Option(None, "--validators", help="validators to run (repeat or comma "
                                                   "separated); default: all that apply"),
    agent: bool = typer.Option(False, "--agent", help="also run the search agent (needs --llm)"),
    split: Optional[str] = typer.Option(None, "--split", help="qrels/SPLIT.tsv (default: test.tsv, qrels.tsv or the only one)"),
    dense: str = typer.Option("default", "--dense", help="dense model when an index is built: default, a name, or none"),
    answer_chunks: Optional[str] = typer.Option(None, "--answer-chunks", help="auto, all (single-hop sets) or none"),
    stop_at_first_flag: Optional[bool] = typer.Option(None, "--stop-at-first-flag/--all-validators",
                                                      help="stop a question's validators at its first flag"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="only the first N judged questions"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Audit a benchmark: which questions one broad query answers, which leak their answer, which need no evidence."""
    from factory.audit import run_audit

    names = [v.strip() for item in (validators or []) for v in item.split(",") if v.strip()] or None
    settings = load_settings(config, **{
        "llm.spec": llm, "audit.answer_chunks": answer_chunks, "audit.stop_at_first_flag": stop_at_first_flag,
    })
    with Progress(TextColumn("[bold]audit[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("audit", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = run_audit(benchmark, out, settings, lang=lang, llm_spec=llm, validators=names, agent=agent,
                           split=split, dense=dense, limit=limit, progress=advance)
    _print(result.summary)
    console.print(f"audit.jsonl, summary.json, card.md/html and the store in [bold]{out}[/]")


def _print(summary: dict) -> None:
    table = Table(title=f"audit of {summary['questions']} questions ({summary['lang']})")
    for column in ("validator", "ran", "flagged", "share", "not run (why)", "errors"):
        table.add_column(column, justify="left" if column in ("validator", "not run (why)") else "right")
    for name, row in summary["per_validator"].items():
        share = "-" if row["share_flagged"] is None else f"{100 * row['share_flagged']:.1f}%"
        why = ", ".join(f"{r} {c}" for r, c in row["not_run_reasons"].items()) or ""
        table.add_row(name, str(row["ran"]), str(row["flagged"]), share, why, str(row["errors"]))
    console.print(table)
    overall = summary["overall"]
    share = "-" if overall["share_flagged"] is None else f"{100 * overall['share_flagged']:.1f}%"
    console.print(f"flagged by at least one validator: {overall['flagged']} of {summary['questions']} ({share})")
    if summary["broad_query_recall"]:
        console.print("broad-query recall@{}: {}".format(
            summary["shortcut"]["k"], ", ".join(f"{k} {v:.3f}" for k, v in summary["broad_query_recall"].items())))
    for note in summary["notes"]:
        console.print(f"note: {note}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
