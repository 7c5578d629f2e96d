"""The entity part of ``factory stats``: labels, top entities, top co-occurring pairs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

NAMED_LABELS = ("person", "organization", "location", "work", "event", "other")


def current_generation(store) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM current_generation")
    return rows[0] if rows else None


def top_entities(store, n: int = 20, lang: str | None = None, labels: tuple[str, ...] | None = None) -> list[dict]:
    """The entities in the most documents (ties: most mentions, then key)."""
    label_list = list(labels) if labels else None
    return store.query(
        """SELECT lang, entity_key, label, name, mention_count, chunk_freq, doc_freq
           FROM current_entities
           WHERE (? IS NULL OR lang = ?) AND (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], label))
           ORDER BY doc_freq DESC, mention_count DESC, entity_key LIMIT ?""",
        [lang, lang, label_list, label_list, n],
    )


def top_pairs(store, n: int = 15, lang: str | None = None, named_only: bool = True) -> list[dict]:
    """The pairs sharing the most chunks (named entities only unless told otherwise).

    Names are looked up for the chosen pairs only: joining the entity view twice
    against all pairs lets DuckDB pair up entities by language first (25k x 25k rows).
    """
    return store.query(
        """WITH top AS (
               SELECT lang, key_a, key_b, chunk_count, doc_count, npmi FROM current_pairs
               WHERE (? IS NULL OR lang = ?)
                 AND (NOT ? OR (label_a NOT IN ('date', 'number') AND label_b NOT IN ('date', 'number')))
               ORDER BY chunk_count DESC, npmi DESC, key_a, key_b LIMIT ?
           ),
           names AS (
               SELECT lang, entity_key, name FROM current_entities
               WHERE entity_key IN (SELECT key_a FROM top UNION SELECT key_b FROM top)
           )
           SELECT t.lang, t.key_a, t.key_b, coalesce(a.name, t.key_a) AS name_a, coalesce(b.name, t.key_b) AS name_b,
                  t.chunk_count, t.doc_count, t.npmi
           FROM top t
           LEFT JOIN names a ON a.lang = t.lang AND a.entity_key = t.key_a
           LEFT JOIN names b ON b.lang = t.lang AND b.entity_key = t.key_b
           ORDER BY t.chunk_count DESC, t.npmi DESC, t.key_a, t.key_b""",
        [lang, lang, named_only, n],
    )


def print_entity_summary(store, console: Console, top: int = 20) -> None:
    """Entities per label, top entities and top co-occurring pairs, per language."""
    generation = current_generation(store)
    if generation is None:
        console.print("no entity statistics yet (run `factory ingest`, which annotates and computes them)")
        return
    console.print(
        f"entity statistics {generation['generation']}: {generation['n_entities']:,} entities, "
        f"{generation['n_mentions']:,} mentions in {generation['n_chunks']:,} chunks, "
        f"{generation['n_pairs']:,} co-occurring pairs"
    )
    by_label = store.query(
        """SELECT lang, label, count(*) AS entities, sum(mention_count) AS mentions,
                  count(*) FILTER (WHERE doc_freq >= 2) AS in_2_docs
           FROM current_entities GROUP BY ALL ORDER BY lang, entities DESC"""
    )
    table = Table(title="Entities per label")
    for column in ("lang", "label", "entities", "mentions", "in ≥2 docs"):
        table.add_column(column, justify="right" if column not in ("lang", "label") else "left")
    for row in by_label:
        table.add_row(row["lang"], row["label"], f"{row['entities']:,}", f"{row['mentions']:,}", f"{row['in_2_docs']:,}")
    console.print(table)
    for lang in sorted({row["lang"] for row in by_label}):
        for title, labels, n in ((f"Top {top} named entities ({lang}, by documents)", NAMED_LABELS, top),
                                 (f"Top 10 dates and numbers ({lang}, by documents)", ("date", "number"), 10)):
            table = Table(title=title)
            for column in ("#", "name", "label", "key", "docs", "chunks", "mentions"):
                table.add_column(column, justify="right" if column in ("#", "docs", "chunks", "mentions") else "left")
            for i, row in enumerate(top_entities(store, n, lang, labels), 1):
                table.add_row(str(i), row["name"], row["label"], row["entity_key"], f"{row['doc_freq']:,}",
                              f"{row['chunk_freq']:,}", f"{row['mention_count']:,}")
            console.print(table)
        table = Table(title=f"Top co-occurring pairs ({lang}, named entities, by shared chunks)")
        for column in ("a", "b", "chunks", "docs", "npmi"):
            table.add_column(column, justify="right" if column in ("chunks", "docs", "npmi") else "left")
        for row in top_pairs(store, 15, lang):
            table.add_row(row["name_a"], row["name_b"], f"{row['chunk_count']:,}", f"{row['doc_count']:,}",
                          f"{row['npmi']:.3f}")
        console.print(table)
