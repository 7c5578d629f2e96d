"""`factory cost`: tokens per accepted task, by stage and validator, and how early rejections come.

Reads the store's views only (factory/cost.py), so it works from a second terminal while
a run or a build is writing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

out = Console(soft_wrap=True)


def _n(value: object) -> str:
    return "-" if value is None else f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def cost_command(
    store: Path = typer.Option(..., "--store", help="store folder"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="one run only (default: every run together)"),
    as_json: bool = typer.Option(False, "--json", help="print the figures as one JSON object"),
) -> None:
    """Tokens in and out per accepted task, per stage, and the share of rejections before any agent run."""
    from factory.cost import run_cost
    from factory.store import Store

    cost = run_cost(Store(store, create=False), run_id)
    if as_json:
        out.print(json.dumps(cost.as_dict(), ensure_ascii=False), highlight=False)
        return
    table = Table(title="tokens per accepted task" + (f" ({run_id})" if run_id else ""))
    for column in ("stage", "calls", "tokens in", "tokens out", "thinking", "truncated", "in / accepted",
                   "out / accepted"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for row in [*cost.stages, {"label": "all stages", **cost.total}]:
        table.add_row(row["label"], _n(row["calls"]), _n(row["tokens_in"]), _n(row["tokens_out"]),
                      _n(row["thinking_tokens"]), _n(row["truncated"]), _n(row["tokens_in_per_accepted"]),
                      _n(row["tokens_out_per_accepted"]))
    out.print(table)
    share = cost.rejected_before_agent_share
    out.print(f"candidates finished {cost.finished}: accepted {cost.accepted}, rejected {cost.rejected}; "
              f"rejections decided before any agent run: {cost.rejected_before_agent}"
              + (f" ({share:.0%})" if share is not None else ""), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("cost")(cost_command)
