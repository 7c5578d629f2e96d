"""`factory build-benchmark`: the build flow with a live view fed from the store.

The flow runs in this process (Prefect's ephemeral mode: no server to start by
hand). The live view polls the store's views, the same ones a second terminal can
query while the build runs (`factory rejected`, `duckdb STORE/catalog.duckdb`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from factory.store import Store

console = Console()
POLL_SECONDS = 2.0


def snapshot(store: Store, run_id: str) -> dict[str, Any]:
    """Where a build stands: candidates by status, rejections per validator, revisions, tokens."""
    con = store.connect()
    try:
        status = dict(con.execute(
            "SELECT status, count(*) FROM candidates WHERE run_id = ? GROUP BY status", [run_id]
        ).fetchall())
        rejected_by = con.execute(
            "SELECT coalesce(validator, stage, '?') AS k, count(*) AS n FROM candidates "
            "WHERE run_id = ? AND status = 'rejected' GROUP BY k ORDER BY n DESC, k", [run_id]
        ).fetchall()
        revisions = con.execute(
            "SELECT coalesce(sum(revisions), 0) FROM candidates WHERE run_id = ? AND status <> 'started'", [run_id]
        ).fetchone()[0]
        calls, tokens_in, tokens_out = con.execute(
            "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0) FROM llm_calls WHERE run_id = ?",
            [run_id],
        ).fetchone()
    finally:
        con.close()
    return {
        "accepted": int(status.get("accepted", 0)),
        "rejected": int(status.get("rejected", 0)),
        "in_flight": int(status.get("started", 0)),
        "rejected_by": [(str(k), int(v)) for k, v in rejected_by],
        "revisions": int(revisions or 0),
        "llm_calls": int(calls),
        "tokens": int(tokens_in) + int(tokens_out),
    }


class LiveView:
    """Polls the store in a background thread; Rich redraws from the last snapshot."""

    def __init__(self, store_path: Path, run_id: str, n: int, started: float) -> None:
        self.store_path, self.run_id, self.n, self.started = store_path, run_id, n, started
        self.data: dict[str, Any] | None = None
        self.stage = "starting Prefect"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="build-live-view", daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            if not (self.store_path / "tables").exists():
                continue
            try:
                self.data = snapshot(Store(self.store_path), self.run_id)
            except Exception:  # a reader must never break the build; try again next tick
                continue

    def __enter__(self) -> "LiveView":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def render(self) -> Group:
        elapsed = time.monotonic() - self.started
        head = Text(f"build {self.run_id}  elapsed {elapsed:,.0f}s", style="bold")
        if self.data is None:
            return Group(head, Text(f"{self.stage} (ingest and index first; candidates appear here)"))
        d = self.data
        table = Table.grid(padding=(0, 2))
        table.add_row("accepted", f"{d['accepted']} / {self.n}")
        table.add_row("rejected", str(d["rejected"]))
        for name, count in d["rejected_by"][:8]:
            table.add_row(f"  by {name}", str(count))
        table.add_row("in flight", str(d["in_flight"]))
        table.add_row("revisions", str(d["revisions"]))
        table.add_row("LLM calls", f"{d['llm_calls']:,}  ({d['tokens']:,} tokens)")
        return Group(head, table)


def build_benchmark_command(
    lang: str = typer.Option(..., "--lang", help="en or ru"),
    corpus: Path = typer.Option(..., "--corpus", help="corpus file or folder (jsonl, parquet, text files)"),
    n: int = typer.Option(None, "--n", help="accepted tasks wanted (settings: build.n)"),
    llm: str = typer.Option(None, "--llm", help="openai:URL#MODEL, llamacpp:NAME_OR_PATH or fake"),
    out: Path = typer.Option(..., "--out", help="the benchmark folder, e.g. outputs/NAME"),
    store: Path = typer.Option(None, "--store", help="store folder (default OUT/store)"),
    profile: str = typer.Option(None, "--profile", help="full or demo (demo: cheaper agent checks, same validators)"),
    seed: int = typer.Option(None, "--seed"),
    config: Path = typer.Option(None, "--config", help="factory.toml or YAML run config"),
    concurrency: int = typer.Option(None, "--concurrency", help="candidates in flight (generate.concurrency)"),
    max_attempts: int = typer.Option(None, "--max-attempts", help="candidate budget (default n x attempts_per_task)"),
    token_budget: int = typer.Option(None, "--token-budget", help="stop starting candidates after this many tokens"),
    task_runner: str = typer.Option("threads", "--task-runner", help="threads (default) or dask"),
    live: bool = typer.Option(True, "--live/--no-live", help="live progress view"),
) -> None:
    """Run the whole factory as a Prefect flow: ingest, index, generate, validate, export.

    Rerunning the same command after a crash continues the same run.
    """
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from flows.build_benchmark import build_benchmark, resolve_build

    args = dict(
        lang=lang, corpus=str(corpus), n=n, llm_spec=llm, out=str(out), store=str(store) if store else None,
        config=str(config) if config else None, seed=seed, profile=profile, task_runner=task_runner,
        concurrency=concurrency, max_attempts=max_attempts, token_budget=token_budget,
    )
    plan = resolve_build(**args)  # bad flags fail here, before Prefect starts
    console.print(
        f"build {plan.run_id}: {plan.lang} corpus {plan.corpus} -> {plan.out} "
        f"(n={plan.n}, llm={plan.settings.llm.spec}, profile={plan.settings.build.profile}, "
        f"{plan.concurrency} in flight, at most {plan.max_attempts} candidates)"
    )
    started = time.monotonic()
    if live and console.is_terminal:
        with LiveView(plan.store_path, plan.run_id, plan.n, started) as view, Live(
            get_renderable=view.render, console=console, refresh_per_second=2, transient=False
        ):
            result = build_benchmark(**args)
    else:
        result = build_benchmark(**args)
    result["wall_s_command"] = round(time.monotonic() - started, 1)
    _print_summary(plan.store_path, plan.run_id, result)


def _print_summary(store_path: Path, run_id: str, result: dict[str, Any]) -> None:
    store = Store(store_path, create=False)
    funnel = store.query(
        "SELECT validator, min(step) AS step, count(*) FILTER (WHERE NOT skipped) AS seen, "
        "count(*) FILTER (WHERE NOT ok AND NOT skipped) AS rejected, count(*) FILTER (WHERE skipped) AS skipped "
        "FROM verdicts WHERE run_id = ? GROUP BY validator ORDER BY step", [run_id]
    )
    table = Table(title="validator funnel")
    for column in ("validator", "seen", "rejected", "skipped"):
        table.add_column(column, justify="left" if column == "validator" else "right")
    for row in funnel:
        table.add_row(row["validator"], str(row["seen"]), str(row["rejected"]), str(row["skipped"]))
    console.print(table)
    finished = result["accepted_total"] + result["rejected_total"] if "accepted_total" in result else None
    console.print(
        f"benchmark folder: {result['out']}  ({result['accepted']} tasks; card: {Path(result['out']) / 'card.html'})"
    )
    if finished is not None:
        console.print(f"acceptance: {result['accepted_total']}/{finished} finished candidates")
    typer.echo(json.dumps(result, sort_keys=True))  # one unwrapped line, for scripts


def register(app: typer.Typer) -> None:
    app.command("build-benchmark")(build_benchmark_command)
