"""`factory eval`: Recall@k and trajectory recall of a retriever on a benchmark folder."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from factory.settings import load_settings

console = Console()


def eval_command(
    benchmark: Path = typer.Option(..., "--benchmark", help="benchmark folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)"),
    split: Optional[str] = typer.Option(None, "--split", help="qrels/SPLIT.tsv (default: test.tsv, qrels.tsv or the only one)"),
    retriever: List[str] = typer.Option(..., "--retriever", help="bm25, dense, hybrid or agent; repeat for several"),
    llm: Optional[str] = typer.Option(None, "--llm", help="LLM spec for the agent (default: settings llm.spec)"),
    rollouts: Optional[int] = typer.Option(None, "--rollouts", min=1, help="agent rollouts per query, fused by RRF"),
    unit: str = typer.Option("chunk", "--unit", help="score chunks or their parent documents (chunk|doc)"),
    k: int = typer.Option(10, "--k", min=1, help="size of the final set"),
    out: Optional[Path] = typer.Option(None, "--out", help="where run files and metrics.json go (default: BENCHMARK/eval)"),
    store: Optional[Path] = typer.Option(None, "--store", help="store for agent traces and LLM calls (default: OUT/store)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="only the first N queries"),
    per_query: bool = typer.Option(True, "--per-query/--no-per-query", help="list the agent's queries and how each ended"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Score retrievers on a benchmark: final-set Recall@k, trajectory recall, per mechanic; TREC run files."""
    from factory.evaluate import RETRIEVERS, BenchmarkError, evaluate, load_benchmark, open_benchmark_index

    kinds = [r.strip() for item in retriever for r in item.split(",") if r.strip()]
    bad = [r for r in kinds if r not in RETRIEVERS]
    if bad:
        raise BenchmarkError(f"--retriever {bad[0]!r}: choose from {', '.join(RETRIEVERS)}")
    if unit not in ("chunk", "doc"):
        raise BenchmarkError(f"--unit must be chunk or doc, not {unit!r}")
    settings = load_settings(config, **{"llm.spec": llm, "agent.rollouts": rollouts})
    bench = load_benchmark(benchmark, split)
    if limit:
        bench.queries = bench.queries[:limit]
    out = out or benchmark / "eval"
    searchers = {settings.agent.searcher if kind == "agent" else kind for kind in kinds}
    dense = "default" if searchers & {"dense", "hybrid"} else None
    if not (benchmark / "index").exists():
        console.print(f"{benchmark} has no index/: building one in {out / 'scratch'}")
    index = open_benchmark_index(bench, settings, scratch=out / "scratch", dense=dense)
    reports = []
    for kind in kinds:
        gateway = None
        trace_store = None
        if kind == "agent":
            from factory.llm.registry import make_gateway
            from factory.store import Store

            trace_store = Store(store or out / "store")
            gateway = make_gateway(settings.llm.spec, settings, trace_store, stage_default="eval")
        with Progress(
            TextColumn(f"[bold]{kind}[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True, disable=kind != "agent",
        ) as progress:
            task = progress.add_task(kind, total=len(bench.queries))
            report = evaluate(
                bench, kind, index=index, llm=gateway, settings=settings, rollouts=settings.agent.rollouts,
                unit=unit, k=k, out=out, store=trace_store, progress=lambda: progress.advance(task),
            )
        reports.append(report)
    _print(reports, k)
    for report in reports:
        if report.retriever == "agent":
            _print_endings(report, k, per_query)
    console.print(f"run files and metrics.json in [bold]{out}[/]")


def _print(reports, k: int) -> None:
    table = Table(title=f"Recall@{k} ({reports[0].unit} unit, {reports[0].queries} queries)")
    for column in ("retriever", f"R@{k}", "trajectory recall", "searches/query", "time"):
        table.add_column(column, justify="left" if column == "retriever" else "right")
    for r in reports:
        name = r.retriever + (f" ({r.llm}, {r.rollouts} rollout{'s' if r.rollouts != 1 else ''})" if r.llm else "")
        table.add_row(name, f"{r.recall:.4f}", f"{r.trajectory_recall:.4f}",
                      f"{r.searches_mean:.1f}" if r.retriever == "agent" else "1", f"{r.elapsed_s:.1f} s")
    console.print(table)
    mechanics = sorted({m for r in reports for m in r.per_mechanic})
    if len(mechanics) > 1 or mechanics and mechanics != ["(none)"]:
        by = Table(title=f"R@{k} per mechanic")
        by.add_column("mechanic")
        by.add_column("queries", justify="right")
        for r in reports:
            by.add_column(r.retriever, justify="right")
        for m in mechanics:
            n = next(r.per_mechanic[m]["queries"] for r in reports if m in r.per_mechanic)
            by.add_row(m, str(int(n)), *[f"{r.per_mechanic[m]['recall']:.4f}" if m in r.per_mechanic else "-" for r in reports])
        console.print(by)


def _print_endings(report, k: int, per_query: bool) -> None:
    """How the agent's episodes ended (finalized, fallback, error), in total and per query,
    with Recall@k over all queries and over each kind: the model's own rankings apart."""
    from factory.evaluate import OUTCOMES

    rows = report.per_query
    total = Table(title="agent: how its episodes ended")
    for column in ("ended", "queries", f"R@{k}"):
        total.add_column(column, justify="left" if column == "ended" else "right")
    for outcome in OUTCOMES:
        kind = [r["recall"] for r in rows if r.get("ended") == outcome]
        total.add_row(outcome, str(report.ended.get(outcome, 0)), f"{sum(kind) / len(kind):.4f}" if kind else "-")
    total.add_row("all", str(report.queries), f"{report.recall:.4f}")
    console.print(total)
    if not per_query:
        return
    several = report.rollouts > 1
    table = Table(title="agent per query")
    columns = ["query", "mechanic", "ended", *(OUTCOMES if several else ()), f"R@{k}", "trajectory recall", "searches"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("query", "mechanic", "ended") else "right")
    for row in rows:
        counts = [str(row.get(o, 0)) for o in OUTCOMES] if several else []
        table.add_row(row["qid"], row["mechanic"], row.get("ended", "-"), *counts,
                      f"{row['recall']:.4f}", f"{row['trajectory_recall']:.4f}", str(row["searches"]))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
