"""`factory entity NAME --store PATH`: one entity's aliases, linked names, frequency and neighbours."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from factory.errors import FactoryError


def register(app: typer.Typer) -> None:
    @app.command("entity")
    def entity(
        name: str = typer.Argument(..., help="entity name as written in the corpus, any inflected form"),
        store_path: Path = typer.Option(..., "--store", help="the store folder"),
        lang: str = typer.Option(None, "--lang", help="en or ru (default: both)"),
        limit: int = typer.Option(15, "--limit", help="neighbours to show"),
        min_npmi: float = typer.Option(0.0, "--min-npmi", help="hide weaker neighbours"),
        max_df: int = typer.Option(None, "--max-df", help="hide neighbours in more documents (hubs)"),
    ) -> None:
        """Show an entity's aliases, the names linked to it and why, frequency and strongest co-occurring neighbours."""
        from factory.graph.neighbours import entity_links, find_entity, neighbours, suggest_entities
        from factory.graph.report import current_generation
        from factory.store import Store

        if lang not in (None, "en", "ru"):
            raise FactoryError(f"--lang must be en or ru, got {lang!r}")
        store = Store(store_path, create=False)
        if current_generation(store) is None:
            raise FactoryError(f"{store_path}: no entity statistics yet (run `factory ingest` first)")
        found = find_entity(store, name, lang)
        if not found:
            close = suggest_entities(store, name, lang)
            hint = "; did you mean: " + ", ".join(f"{r['name']} ({r['lang']})" for r in close) if close else ""
            raise FactoryError(f"no entity {name!r} in {store_path}{hint}")
        console = Console()
        for row in found[:3]:
            console.print(
                f"[bold]{escape(row['name'])}[/]  key={escape(repr(row['entity_key']))}  label={row['label']}  lang={row['lang']}"
                f"  (matched by {row['match']})"
            )
            console.print(
                f"  mentions {row['mention_count']:,} · chunks {row['chunk_freq']:,} · documents {row['doc_freq']:,}"
            )
            console.print("  aliases: " + escape(", ".join(row["aliases"] or [])), highlight=False)  # corpus text
            links = entity_links(store, row["entity_key"], row["lang"])
            if links:
                linked = Table(title="linked names (the identity step: key, rule, where, why)")
                for column in ("key", "rule", "where", "mentions", "evidence"):
                    linked.add_column(column, justify="right" if column == "mentions" else "left")
                for link in links:
                    where = "corpus" if link["corpus"] else f"{link['documents']} documents"
                    linked.add_row(escape(link["entity_key"]), link["rule"], where, str(link["mentions"]),
                                   escape(link["evidence"] or ""))
                console.print(linked)
            table = Table(title="strongest neighbours (by shared chunks, then NPMI)")
            for column in ("neighbour", "label", "chunks", "docs", "npmi", "its docs"):
                table.add_column(column, justify="left" if column in ("neighbour", "label") else "right")
            for n in neighbours(store, row["entity_key"], min_npmi, max_df, limit, lang=row["lang"], order="count"):
                table.add_row(escape(n["name"]), n["label"], str(n["chunk_count"]), str(n["doc_count"]),
                              f"{n['npmi']:.3f}", str(n["doc_freq"]))
            console.print(table)
