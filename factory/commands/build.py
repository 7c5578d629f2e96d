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

from factory.params import BuildParams, cli_options
from factory.store import Store
from factory.store.funnel import candidate_outcomes, validator_funnel

console = Console()
POLL_SECONDS = 2.0


def snapshot(store: Store, run_id: str) -> dict[str, Any]:
    """Where a build stands: candidates by status, rejections per validator, revisions, tokens."""
    outcomes = candidate_outcomes(store, run_id)
    calls = store.query("SELECT count(*) AS calls, coalesce(sum(tokens_in) + sum(tokens_out), 0) AS tokens "
                        "FROM llm_calls WHERE run_id = ?", [run_id])[0]
    return {
        "accepted": outcomes["accepted"],
        "rejected": outcomes["rejected"],
        "in_flight": outcomes["running"],
        "rejected_by": sorted(outcomes["rejected_by"].items(), key=lambda kv: (-kv[1], kv[0])),
        "revisions": outcomes["revisions"],
        "llm_calls": int(calls["calls"]),
        "tokens": int(calls["tokens"]),
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


@cli_options(BuildParams)
def build_benchmark_command(
    params: BuildParams,
    live: bool = typer.Option(True, "--live/--no-live", help="live progress view"),
) -> None:
    """Run the whole factory as a Prefect flow: ingest, index, generate, validate, export.

    Rerunning the same command after a crash continues the same run.
    """
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from flows.build_benchmark import build_benchmark, resolve_build

    plan = resolve_build(params)  # bad flags fail here, before Prefect starts
    console.print(
        f"build {plan.run_id}: {plan.lang} corpus {plan.corpus} -> {plan.out} "
        f"(n={plan.n}, llm={plan.settings.llm.spec}, profile={plan.settings.build.profile}, "
        f"{plan.limits.in_flight} in flight, lookahead {plan.limits.lookahead}, "
        f"at most {plan.limits.max_attempts} candidates)"
    )
    started = time.monotonic()
    if live and console.is_terminal:
        with LiveView(plan.store_path, plan.run_id, plan.n, started) as view, Live(
            get_renderable=view.render, console=console, refresh_per_second=2, transient=False
        ):
            result = build_benchmark(**params.flat())
    else:
        result = build_benchmark(**params.flat())
    result["wall_s_command"] = round(time.monotonic() - started, 1)
    _print_summary(plan.store_path, plan.run_id, result)


def _print_summary(store_path: Path, run_id: str, result: dict[str, Any]) -> None:
    from factory.commands.generate import funnel_table

    console.print(funnel_table(validator_funnel(Store(store_path, create=False), run_id)))
    finished = result["accepted_total"] + result["rejected_total"] if "accepted_total" in result else None
    console.print(
        f"benchmark folder: {result['out']}  ({result['accepted']} tasks; card: {Path(result['out']) / 'card.html'})"
    )
    if finished is not None:
        console.print(f"acceptance: {result['accepted_total']}/{finished} finished candidates")
    typer.echo(json.dumps(result, sort_keys=True))  # one unwrapped line, for scripts


def register(app: typer.Typer) -> None:
    app.command("build-benchmark")(build_benchmark_command)
