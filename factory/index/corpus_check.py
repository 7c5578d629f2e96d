"""Fingerprints that tie a fixed index to the corpus it was built from, and the checks.

A mismatch message says what differs (chunks missing, added, changed, with a few
ids), so a user knows whether to rebuild the index or point at the right corpus.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from factory.benchmark_folder import BenchmarkFolderError, read_corpus
from factory.index.base import SearchIndexError
from factory.index.manifest import Manifest


def _digest(rows: Iterable[tuple[str, ...]]) -> str:
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r[0]):
        digest.update(json.dumps(list(row), ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def fingerprint(pairs: Iterable[tuple[str, str]]) -> str:
    """sha256 over the (chunk_id, content_hash) pairs sorted by chunk id."""
    return _digest(pairs)


def text_fingerprint(triples: Iterable[tuple[str, str, str]]) -> str:
    """sha256 over the (chunk_id, title, text) triples sorted by chunk id."""
    return _digest(triples)


def _row_hash(*parts: str) -> str:
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


def _describe(index_rows: dict[str, str], corpus_rows: dict[str, str]) -> str:
    missing = sorted(set(index_rows) - set(corpus_rows))
    added = sorted(set(corpus_rows) - set(index_rows))
    changed = sorted(k for k in set(index_rows) & set(corpus_rows) if index_rows[k] != corpus_rows[k])
    parts = []
    for label, ids in (("indexed but not in the corpus", missing), ("in the corpus but not indexed", added), ("changed", changed)):
        if ids:
            parts.append(f"{len(ids)} chunk(s) {label} (e.g. {', '.join(ids[:3])})")
    return "; ".join(parts) or "the same chunks, yet the fingerprints differ"


def _index_rows(index_path: Path, key: str) -> dict[str, str]:
    import pyarrow as pa

    table = pa.ipc.open_file(pa.memory_map(str(index_path / "passages.arrow"), "r")).read_all()
    ids = table.column("chunk_id").to_pylist()
    if key == "content_hash":
        return dict(zip(ids, table.column("content_hash").to_pylist()))
    titles, texts = table.column("title").to_pylist(), table.column("text").to_pylist()
    return {cid: _row_hash(title, text) for cid, title, text in zip(ids, titles, texts)}


def check_store(manifest: Manifest, store: Any, index_path: Path) -> None:
    rows = store.query("SELECT chunk_id, content_hash FROM chunks WHERE lang = ?", [manifest.lang])
    pairs = [(r["chunk_id"], r["content_hash"]) for r in rows]
    if fingerprint(pairs) == manifest.corpus_fingerprint and len(pairs) == manifest.chunk_count:
        return
    detail = _describe(_index_rows(index_path, "content_hash"), dict(pairs))
    raise SearchIndexError(
        f"{index_path} was built from another corpus than the {manifest.lang} chunks of the store {store.root}: "
        f"{detail}; rebuild it with `factory index build`"
    )


def read_beir_corpus(path: Path) -> list[tuple[str, str, str]]:
    """(_id, title, text) rows of a BEIR corpus.jsonl; a bad line is an error naming it."""
    try:
        return [(p.chunk_id, p.title, p.text) for p in read_corpus(path)]
    except BenchmarkFolderError as exc:
        raise SearchIndexError(str(exc)) from exc


def check_corpus_file(manifest: Manifest, corpus_path: Path, index_path: Path) -> None:
    rows = read_beir_corpus(corpus_path)
    if text_fingerprint(rows) == manifest.text_fingerprint and len(rows) == manifest.chunk_count:
        return
    corpus_rows = {cid: _row_hash(title, text) for cid, title, text in rows}
    detail = _describe(_index_rows(index_path, "text"), corpus_rows)
    raise SearchIndexError(f"{index_path} was not built from {corpus_path}: {detail}; rebuild the index from that corpus")
