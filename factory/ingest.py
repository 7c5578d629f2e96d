"""The ingest pipeline: read -> chunk -> store -> near-duplicates -> (NER, entity statistics).

Idempotent by content: each document's hash covers its text, title, metadata and
the chunker's settings, and a document whose hash is already stored is skipped, so
a rerun on the same corpus writes no new document or chunk rows and changes no ids.
A changed document is re-chunked under the same ids ``{doc_id}_{n}``; each stored
chunk whose text changed or disappeared gets a ``chunk_changes`` row, so later stages
can invalidate tasks that cite it.

Rows are flushed in dependency order (chunks, then chunk changes, then documents) so
that after a crash no document is stored without its chunks: a rerun redoes exactly
the documents that were not stored.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from factory.corpus.chunking import Chunker, count_tokens
from factory.corpus.dedup import DedupIndex, NearDuplicate, Sketcher, document_sketch
from factory.corpus.readers import CorpusError, CorpusReader, ReadProblem
from factory.errors import FactoryError
from factory.records import Chunk, Document, Lang
from factory.settings import Settings, load_settings
from factory.store import Store
from factory.store.runs import new_run_id, record_run

FLUSH_SECONDS = 10.0
_FLUSH_ORDER = ("chunks", "chunk_changes", "documents")


class IngestError(FactoryError):
    pass


class IngestSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    corpus: str
    lang: str
    docs_read: int = 0
    docs_new: int = 0
    docs_changed: int = 0
    docs_unchanged: int = 0
    chunks_written: int = 0
    chunks_modified: int = 0
    chunks_removed: int = 0
    near_dup_chunks: int = 0
    near_dup_docs: int = 0
    words: int = 0
    skipped: dict[str, int] = Field(default_factory=dict, description="records skipped, by kind of problem")
    first_problems: list[str] = Field(default_factory=list, description="up to 20 problems as 'file:line: message'")
    entities: bool = False
    corpus_s: float = Field(0.0, description="read + chunk + dedup + store")
    entities_s: float = Field(0.0, description="NER and entity statistics")
    elapsed_s: float = 0.0
    docs_per_s: float = Field(0.0, description="documents read per second of corpus_s")
    words_per_s: float = Field(0.0, description="words read per second of corpus_s")

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def document_hash(doc: Document, chunker_signature: str) -> str:
    payload = json.dumps(
        [chunker_signature, doc.title, doc.text, doc.meta], ensure_ascii=False, sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def ingest(
    corpus: str | Path,
    store: Store,
    lang: Lang,
    settings: Settings | None = None,
    *,
    entities: bool = True,
    strict: bool | None = None,
    progress: bool = False,
    console: Console | None = None,
) -> IngestSummary:
    """Ingest a corpus file or folder into ``store``; returns what happened.

    Raises :class:`CorpusError` for a missing path, for a corpus without a single
    usable document, and (``strict``) for the first bad record.
    """
    settings = settings or load_settings()
    strict = settings.ingest.strict if strict is None else strict
    started = time.perf_counter()
    reader = CorpusReader(corpus, lang, max_doc_chars=settings.ingest.max_doc_chars, strict=strict)
    if entities:
        _entity_functions()  # fail before writing anything when the entity layer is missing
    run_id = new_run_id("ingest")
    record_run(store, run_id, "ingest", settings)
    summary = IngestSummary(run_id=run_id, corpus=str(corpus), lang=lang)

    chunker = Chunker(lang, settings.ingest.chunk_tokens)
    sketcher = Sketcher(settings.ingest.minhash_perm)
    known = {row["doc_id"]: row["doc_hash"] for row in store.query("SELECT doc_id, doc_hash FROM documents")}
    sketches: list[tuple[str, str, Any]] = []  # (chunk_id, doc_id, minhash values) of chunks written now
    changed_ids: set[str] = set()

    with store.writer(f"ingest-{lang}", flush_rows=1 << 40, flush_seconds=float("inf")) as writer, Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed:,} documents"),
        TimeElapsedColumn(), console=console, disable=not progress, transient=True,
    ) as bar:
        task = bar.add_task(f"ingest {Path(corpus).name}", total=None)
        last_flush = time.monotonic()
        batch: list[Document] = []

        def process(docs: list[Document]) -> None:
            todo: list[tuple[Document, str]] = []
            for doc in docs:
                summary.docs_read += 1
                summary.words += count_tokens(doc.text)
                digest = document_hash(doc, chunker.signature)
                previous = known.get(doc.id)
                if previous == digest:
                    summary.docs_unchanged += 1
                    continue
                if previous is None:
                    summary.docs_new += 1
                else:
                    summary.docs_changed += 1
                    changed_ids.add(doc.id)
                todo.append((doc, digest))
                known[doc.id] = digest  # a duplicate later in this run counts as unchanged
            if not todo:
                return
            chunk_lists = chunker.chunk_many([doc for doc, _ in todo])
            changes = _chunk_changes(store, [(doc, chunks) for (doc, _), chunks in zip(todo, chunk_lists) if doc.id in changed_ids], run_id)
            for (doc, digest), chunks in zip(todo, chunk_lists):
                writer.append("chunks", (_chunk_row(c, run_id) for c in chunks))
                summary.chunks_written += len(chunks)
                for chunk in chunks:
                    sketches.append((chunk.chunk_id, doc.id, sketcher.sketch(chunk.text)))
            writer.append("chunk_changes", changes)
            summary.chunks_modified += sum(1 for c in changes if c["change"] == "modified")
            summary.chunks_removed += sum(1 for c in changes if c["change"] == "removed")
            writer.append("documents", (_document_row(doc, digest, len(chunks), run_id) for (doc, digest), chunks in zip(todo, chunk_lists)))

        for doc in reader:
            batch.append(doc)
            if len(batch) >= settings.ingest.batch_docs:
                process(batch)
                bar.advance(task, len(batch))
                batch = []
                if time.monotonic() - last_flush > FLUSH_SECONDS:
                    _flush(writer)
                    last_flush = time.monotonic()
        process(batch)
        bar.advance(task, len(batch))
        _flush(writer)

        writer.append("ingest_errors", (_error_row(p, run_id) for p in reader.problems))
        writer.flush("ingest_errors")
        if sketches:
            bar.update(task, description="near-duplicates")
            found, cleared = _near_duplicates(store, lang, run_id, sketches, changed_ids, sketcher, settings.ingest.minhash_threshold)
            writer.append("near_duplicates", (_dup_row(d, run_id) for d in found))
            writer.append("near_duplicates", cleared)
            writer.flush("near_duplicates")
            summary.near_dup_chunks = sum(1 for d in found if d.kind == "chunk")
            summary.near_dup_docs = sum(1 for d in found if d.kind == "document")

        bar.update(task, description=f"ingested {Path(corpus).name}")
    summary.skipped = reader.problem_counts()
    summary.first_problems = [str(p) for p in reader.problems[:20]]
    if summary.docs_read == 0:
        first = f"; first: {reader.problems[0]}" if reader.problems else ""
        raise CorpusError(f"{corpus}: no usable documents ({summary.skipped_total} records skipped{first})")

    summary.corpus_s = round(time.perf_counter() - started, 3)
    summary.docs_per_s = round(summary.docs_read / max(summary.corpus_s, 1e-9), 1)
    summary.words_per_s = round(summary.words / max(summary.corpus_s, 1e-9), 1)
    if entities:
        changed = bool(summary.docs_new or summary.docs_changed)
        summary.entities = _entities(store, lang, settings, run_id, changed=changed, progress=progress)
    summary.elapsed_s = round(time.perf_counter() - started, 3)
    summary.entities_s = round(summary.elapsed_s - summary.corpus_s, 3)
    return summary


# ----------------------------------------------------------------- helpers
def _flush(writer: Any) -> None:
    for table in _FLUSH_ORDER:
        writer.flush(table)


def _chunk_row(chunk: Chunk, run_id: str) -> dict[str, Any]:
    return chunk.model_dump() | {"run_id": run_id}


def _document_row(doc: Document, digest: str, n_chunks: int, run_id: str) -> dict[str, Any]:
    return {
        "doc_id": doc.id,
        "lang": doc.lang,
        "title": doc.title,
        "source": doc.source,
        "doc_hash": digest,
        "n_chars": len(doc.text),
        "n_chunks": n_chunks,
        "meta": json.dumps(doc.meta, ensure_ascii=False, sort_keys=True, default=str),
        "run_id": run_id,
    }


def _error_row(problem: ReadProblem, run_id: str) -> dict[str, Any]:
    return {
        "source": problem.source,
        "line": problem.line,
        "doc_id": problem.doc_id,
        "error": f"{problem.kind}: {problem.message}",
        "run_id": run_id,
    }


def _dup_row(dup: NearDuplicate, run_id: str) -> dict[str, Any]:
    return {"kind": dup.kind, "item_id": dup.item_id, "duplicate_of": dup.duplicate_of, "jaccard": dup.jaccard, "run_id": run_id}


def _chunk_changes(store: Store, changed: list[tuple[Document, list[Chunk]]], run_id: str) -> list[dict[str, Any]]:
    """Rows for every stored (live) chunk of a changed document whose text changed or vanished."""
    if not changed:
        return []
    old = store.query(
        "SELECT c.chunk_id, c.doc_id, c.content_hash FROM chunks c JOIN documents d USING (doc_id) "
        "WHERE c.doc_id IN (SELECT unnest(?::VARCHAR[])) AND c.n < d.n_chunks",
        [[doc.id for doc, _ in changed]],
    )
    new_hash = {c.chunk_id: c.content_hash for _, chunks in changed for c in chunks}
    rows = []
    for row in old:
        now = new_hash.get(row["chunk_id"])
        if now == row["content_hash"]:
            continue
        rows.append({
            "chunk_id": row["chunk_id"],
            "doc_id": row["doc_id"],
            "old_hash": row["content_hash"],
            "new_hash": now,
            "change": "modified" if now is not None else "removed",
            "run_id": run_id,
        })
    return rows


def _near_duplicates(
    store: Store,
    lang: str,
    run_id: str,
    sketches: list[tuple[str, str, Any]],
    changed_docs: set[str],
    sketcher: Sketcher,
    threshold: float,
) -> tuple[list[NearDuplicate], list[dict[str, Any]]]:
    """Check the chunks written now (and their documents) against everything stored before."""
    chunk_index = DedupIndex(sketcher, threshold, "chunk")
    doc_index = DedupIndex(sketcher, threshold, "document")
    con = store.connect()
    try:
        cursor = con.execute(
            "SELECT c.chunk_id, c.doc_id, c.text FROM chunks c JOIN documents d USING (doc_id) "
            "WHERE c.lang = ? AND c.n < d.n_chunks AND c.run_id <> ? ORDER BY c.doc_id, c.n",
            [lang, run_id],
        )
        current_doc, parts = None, []
        while rows := cursor.fetchmany(2048):
            for chunk_id, doc_id, text in rows:
                values = sketcher.sketch(text)
                chunk_index.add(chunk_id, values, check=False)
                if doc_id != current_doc:
                    if current_doc is not None:
                        doc_index.add(current_doc, document_sketch(parts, sketcher), check=False)
                    current_doc, parts = doc_id, []
                parts.append(values)
        if current_doc is not None:
            doc_index.add(current_doc, document_sketch(parts, sketcher), check=False)
    finally:
        con.close()

    found: list[NearDuplicate] = []
    by_doc: dict[str, list[Any]] = {}
    for chunk_id, doc_id, values in sketches:
        dup = chunk_index.add(chunk_id, values)
        if dup:
            found.append(dup)
        by_doc.setdefault(doc_id, []).append(values)
    for doc_id, parts in by_doc.items():
        dup = doc_index.add(doc_id, document_sketch(parts, sketcher))
        if dup:
            found.append(dup)

    # a changed item that was a near-duplicate before and is not now: a row with no target
    cleared: list[dict[str, Any]] = []
    if changed_docs:
        now = {(d.kind, d.item_id) for d in found}
        ids = list(changed_docs) + [c for c, d, _ in sketches if d in changed_docs]
        before = store.query(
            "SELECT kind, item_id FROM near_duplicates WHERE item_id IN (SELECT unnest(?::VARCHAR[])) AND duplicate_of IS NOT NULL",
            [ids],
        )
        cleared = [
            {"kind": r["kind"], "item_id": r["item_id"], "duplicate_of": None, "jaccard": None, "run_id": run_id}
            for r in before if (r["kind"], r["item_id"]) not in now
        ]
    return found, cleared


def _entity_functions() -> tuple[Any, Any]:
    try:
        from factory.graph.stats import compute_statistics
        from factory.nlp.pipeline import annotate_chunks
    except ModuleNotFoundError as exc:
        if exc.name in {"factory.graph.stats", "factory.nlp.pipeline"}:
            raise IngestError(f"the entity layer ({exc.name}) is not installed; ingest with entities=False (--no-entities)") from exc
        raise
    return annotate_chunks, compute_statistics


def _entities(store: Store, lang: str, settings: Settings, run_id: str, *, changed: bool, progress: bool) -> bool:
    """NER over the live chunks of ``lang`` that NER has not seen yet, then the statistics.

    ``annotate_chunks`` skips chunk versions it already annotated, so this covers the
    chunks written now, chunks ingested earlier with entities off, and an annotation
    interrupted half way. Chunks left over from a document that shrank are not live
    and are not annotated. Statistics are recomputed when anything was annotated,
    when chunks changed, or when none exist yet.
    """
    annotate_chunks, compute_statistics = _entity_functions()
    live = [
        row["chunk_id"]
        for row in store.query(
            "SELECT c.chunk_id FROM chunks c JOIN documents d USING (doc_id) WHERE c.lang = ? AND c.n < d.n_chunks",
            [lang],
        )
    ]
    annotate_chunks(store, lang, settings, run_id, chunk_ids=live, progress=progress)
    annotated = store.scalar("SELECT count(*) FROM annotated_chunks WHERE run_id = ?", [run_id])
    never_computed = not store.scalar("SELECT count(*) FROM stats_generations")
    if not (annotated or changed or never_computed):
        return False
    compute_statistics(store, run_id)
    return True
