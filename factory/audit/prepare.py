"""The audit's store and index: the benchmark's passages, under the benchmark's own ids.

Each passage becomes one chunk (``chunk_id`` = its ``_id``, ``doc_id`` from the corpus
or the ``_id``; ``n`` its position among its document's passages): no re-chunking, so
every verdict speaks in the benchmark's ids. The index is the folder's own ``index/``
when it verifies against ``corpus.jsonl`` (what the benchmark was validated against),
else one built under OUT/index from the same passages (kept for reruns).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factory.audit.inputs import AuditInput
from factory.corpus.chunking import content_hash, count_tokens
from factory.errors import FactoryError
from factory.index.base import SearchIndexError


class AuditStoreError(FactoryError):
    pass


@dataclass
class IndexInfo:
    path: str
    reused: bool
    searchers: list[str]
    dense_model: str | None
    notes: list[str] = field(default_factory=list)


def chunk_rows(data: AuditInput, lang: str, run_id: str) -> list[dict[str, Any]]:
    position: dict[str, int] = {}
    rows = []
    for p in data.passages:
        n = position.get(p.doc_id, 0)
        position[p.doc_id] = n + 1
        rows.append({
            "chunk_id": p.chunk_id, "doc_id": p.doc_id, "n": n, "lang": lang, "title": p.title, "text": p.text,
            "content_hash": content_hash(p.text), "n_tokens": count_tokens(p.text), "char_start": 0,
            "char_end": len(p.text), "run_id": run_id,
        })
    return rows


def load_into_store(data: AuditInput, store: Any, lang: str, run_id: str) -> int:
    """Write the passages as chunks (and their documents); returns rows written (0 when already there).

    A store that holds other chunks (another benchmark audited into the same OUT) is an
    error: its index and verdicts would mix two corpora.
    """
    rows = chunk_rows(data, lang, run_id)
    wanted = {(r["chunk_id"], r["content_hash"], r["title"]) for r in rows}
    present = {(r["chunk_id"], r["content_hash"], r["title"] or "")
               for r in store.query("SELECT chunk_id, content_hash, title FROM chunks")}
    if present == wanted:
        return 0
    if present:
        raise AuditStoreError(
            f"{store.root} holds {len(present)} chunks of another corpus than {data.corpus_path}; "
            "audit into a fresh --out folder"
        )
    docs: dict[str, dict[str, Any]] = {}
    for r in rows:
        doc = docs.setdefault(r["doc_id"], {
            "doc_id": r["doc_id"], "lang": lang, "title": r["title"], "source": str(data.corpus_path),
            "doc_hash": "", "n_chars": 0, "n_chunks": 0, "meta": json.dumps({"audit": True}), "run_id": run_id,
        })
        doc["n_chars"] += len(r["text"])
        doc["n_chunks"] += 1
    for doc in docs.values():
        doc["doc_hash"] = content_hash("\n".join(r["content_hash"] for r in rows if r["doc_id"] == doc["doc_id"]))
    with store.writer("audit-ingest", flush_rows=1 << 40, flush_seconds=float("inf")) as writer:
        writer.append("chunks", rows)
        writer.flush("chunks")  # chunks before documents, as ingest does
        writer.append("documents", list(docs.values()))
        writer.flush("documents")
    return len(rows)


def _searchers(index: Any) -> list[str]:
    return ["bm25", "dense", "hybrid"] if index.has_dense else ["bm25"]


def open_audit_index(data: AuditInput, store: Any, out: Path, lang: str, settings: Any,
                     dense: str | None = "default", *, progress: bool = False) -> tuple[Any, IndexInfo]:
    """The benchmark's own index when it verifies against its corpus, else one under OUT/index."""
    from factory.index.fixed import build_index, open_index

    notes: list[str] = []
    own = data.root / "index"
    if own.exists():
        try:
            index = open_index(own, corpus_path=data.corpus_path, settings=settings)
        except SearchIndexError as exc:
            notes.append(f"the folder's index/ was not used: {exc}")
        else:
            if index.lang != lang:
                notes.append(f"the folder's index/ was built for {index.lang!r}, the audit is in {lang!r}: not used")
            else:
                if not index.has_dense:
                    notes.append("the folder's index/ has no dense vectors: the shortcut check ran with BM25 only")
                model = index.manifest.dense.model if index.manifest.dense else None
                return index, IndexInfo(str(own), True, _searchers(index), model, notes)
    target = out / "index"
    want_dense = dense not in (None, "none")
    if (target / "manifest.json").is_file():
        try:
            index = open_index(target, store=store, settings=settings)
            if index.has_dense == want_dense:
                model = index.manifest.dense.model if index.manifest.dense else None
                return index, IndexInfo(str(target), False, _searchers(index), model, notes)
        except SearchIndexError:
            pass  # rebuilt below
    manifest = build_index(store, target, lang, settings, dense if want_dense else None, progress=progress)
    index = open_index(target, store=store, settings=settings)
    if not want_dense:
        notes.append("built without dense vectors (--dense none): the shortcut check ran with BM25 only")
    model = manifest.dense.model if manifest.dense else None
    return index, IndexInfo(str(target), False, _searchers(index), model, notes)
