"""`factory store ...`: look after a store (catalog for interactive DuckDB, compaction)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from factory.store import Store
from factory.store.schema import table_specs

console = Console()
store_app = typer.Typer(help="Maintain a store: the catalog for interactive DuckDB, compaction, table sizes.", no_args_is_help=True)


@store_app.command("catalog")
def catalog(store: Path = typer.Option(..., "--store", help="store folder")) -> None:
    """(Re)write catalog.duckdb: views over the segments, for `duckdb STORE/catalog.duckdb`."""
    target = Store(store, create=False)
    target.refresh_catalog()
    console.print(f"catalog written: {target.catalog_path}  (open it read-only while builds run: duckdb -readonly ...)")


@store_app.command("compact")
def compact(
    store: Path = typer.Option(..., "--store", help="store folder"),
    table: list[str] = typer.Option(None, "--table", help="tables to compact (default: all)"),
) -> None:
    """Merge each table's small segments into one file (safe while writers and readers run)."""
    target = Store(store, create=False)
    for name in table or sorted(table_specs()):
        merged = target.compact(name)
        if merged:
            console.print(f"{name}: merged {merged} segments")


@store_app.command("info")
def info(store: Path = typer.Option(..., "--store", help="store folder")) -> None:
    """Rows and segment files per table, and the applied migrations."""
    target = Store(store, create=False)
    out = Table(title=str(target.root))
    out.add_column("table")
    out.add_column("rows", justify="right")
    out.add_column("segments", justify="right")
    for name in sorted(table_specs()):
        rows = target.scalar(f'SELECT count(*) FROM "{name}"')  # name comes from our own schema, not the user
        out.add_row(name, f"{rows:,}", str(len(target.segments(name))))
    console.print(out)
    console.print(f"migrations applied: {target.applied_migrations()}")


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
