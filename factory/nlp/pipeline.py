"""Annotating chunks: NER over the store's chunks, written back as mentions and alias links.

``annotate_chunks`` is what ``factory ingest`` calls after it wrote chunks. It picks
the chunks of one language whose current version NER has not seen (the
``annotated_chunks`` table remembers chunk versions, also those without a mention),
copies their text to a temporary Parquet file so that no DuckDB connection stays open
while workers are forked, streams it through ``nlp.pipe`` in batches (in worker
processes, see ``annotate_stream``), and writes
mentions, alias links and the seen-marker in that order at each checkpoint: a killed
run leaves at worst mentions without a marker, and the rerun's duplicates are dropped
by the ``mentions`` key.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from spacy.tokens import Doc

from factory.nlp.aliases import AliasLink, find_aliases, split_acronym
from factory.nlp.keys import entity_key
from factory.nlp.labels import NAMED, unify
from factory.nlp.models import load_pipeline
from factory.nlp.quantities import has_date_anchor
from factory.settings import Settings

# spaCy needs about 1 GB per 100k characters for long texts; chunks are far shorter,
# so a longer one is a chunking fault: NER then sees only its head
MAX_NER_CHARS = 100_000
# below this many chunks, worker processes cost more than they save
MIN_CHUNKS_FOR_WORKERS = 400
CHECKPOINT_CHUNKS = 2_000


def doc_mentions(doc: Doc, lang: str) -> list[dict[str, Any]]:
    """Mentions (start, end, text, label, ner_label, entity_key) of one processed doc."""
    out: list[dict[str, Any]] = []
    for ent in doc.ents:
        label = unify(ent.label_, lang)
        if label is None:
            continue
        start, end, text = ent.start_char, ent.end_char, ent.text
        if label == "date" and not has_date_anchor(text):
            continue  # "last year", "annually": no point in time
        pieces = [(start, end, text)]
        parts = split_acronym(text) if label in NAMED else None
        if parts:
            # natasha keeps "Организация Объединённых Наций (ООН)" as one span: two mentions
            name, acronym = parts
            acronym_start = start + text.rindex(acronym)
            pieces = [(start, start + len(name), name), (acronym_start, acronym_start + len(acronym), acronym)]
        for piece_start, piece_end, piece_text in pieces:
            key = entity_key(piece_text, lang, label)
            if _junk(key, label, piece_text):
                continue
            out.append(
                {"start": piece_start, "end": piece_end, "text": piece_text, "label": label,
                 "ner_label": ent.label_, "entity_key": key}
            )
    return out


# era markers and one-letter keys are NER noise ("500 BC" tagged as an organisation, «Ъ»)
_JUNK_KEYS = frozenset({"bc", "bce", "ad", "ce", "до н э", "н э"})


def _junk(key: str, label: str, text: str) -> bool:
    if not key or key in _JUNK_KEYS:
        return True
    if label == "number":
        # spelled-out counts ("one of the", "several") carry no value to compute with
        return not re.search(r"\d", text)
    return len(key) < 2 and not key.isdigit()


def doc_aliases(doc: Doc, mentions: list[dict[str, Any]], lang: str) -> list[AliasLink]:
    """Alias links in one doc (a split "Name (ACR)" span is found here as name + "(ACR)")."""
    named = [(m["start"], m["end"], m["text"], m["label"]) for m in mentions if m["label"] in NAMED]
    return find_aliases(doc.text, named, lang)


def _todo_sql(with_ids: bool) -> str:
    wanted = "AND c.chunk_id IN (SELECT chunk_id FROM _wanted)" if with_ids else ""
    return f"""
        SELECT c.chunk_id, c.doc_id, c.text, c.content_hash
        FROM chunks c
        WHERE c.lang = ? {wanted}
          AND NOT EXISTS (SELECT 1 FROM annotated_chunks a
                          WHERE a.chunk_id = c.chunk_id AND a.content_hash = c.content_hash)
        ORDER BY c.doc_id, c.n
    """


def _export_todo(store, lang: str, chunk_ids: list[str] | None) -> tuple[str, int]:
    path = store.root / "tmp" / f"ner-todo-{uuid.uuid4().hex}.parquet"
    con = store.connect()
    try:
        if chunk_ids is not None:
            con.register("_wanted_arrow", pa.table({"chunk_id": pa.array(chunk_ids, pa.string())}))
            con.execute("CREATE TEMP TABLE _wanted AS SELECT DISTINCT chunk_id FROM _wanted_arrow")
        target = str(path).replace("'", "''")
        con.execute(f"COPY ({_todo_sql(chunk_ids is not None)}) TO '{target}' (FORMAT parquet)", [lang])
    finally:
        con.close()
    return str(path), pq.ParquetFile(path).metadata.num_rows


def _stream(path: str, batch_rows: int = 1_000) -> Iterator[tuple[str, dict[str, str]]]:
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        for row in batch.to_pylist():
            text = row["text"] or ""
            yield text[:MAX_NER_CHARS], {k: row[k] for k in ("chunk_id", "doc_id", "content_hash")}


def worker_count(settings: Settings, n_chunks: int) -> int:
    if n_chunks < MIN_CHUNKS_FOR_WORKERS:
        return 1
    wanted = settings.nlp.n_process or (os.cpu_count() or 1)
    return max(1, min(wanted, os.cpu_count() or 1))


Item = tuple[str, dict[str, str]]  # chunk text, its ids
Result = tuple[dict[str, str], list[dict[str, Any]], list[AliasLink]]


def annotate_batch(lang: str, items: list[Item], batch_size: int) -> list[Result]:
    """NER, keys and alias links for a batch of chunks (runs inside a worker)."""
    nlp = load_pipeline(lang)
    out: list[Result] = []
    for doc, ctx in nlp.pipe(items, as_tuples=True, batch_size=batch_size):
        mentions = doc_mentions(doc, lang)
        out.append((ctx, mentions, doc_aliases(doc, mentions, lang)))
    return out


def _batches(items: Iterator[Item], size: int) -> Iterator[list[Item]]:
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _plain_worker() -> None:
    """Forked workers drop the parent's SIGTERM/SIGINT handlers: under Prefect the parent's
    handler raises in the worker when the pool is shut down, printing a stray traceback."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def annotate_stream(lang: str, items: Iterator[Item], n_process: int, batch_size: int) -> Iterator[Result]:
    """Results in input order. With workers, each forked worker runs ``nlp.pipe`` on a
    batch and sends back only mentions and links: no Doc crosses a process boundary
    (spaCy's own ``n_process`` would serialise every Doc), and keys are computed in
    the workers too. At most two batches per worker are in flight, so memory stays
    flat however large the corpus.
    """
    batches = _batches(items, batch_size * 4)
    if n_process <= 1:
        for batch in batches:
            yield from annotate_batch(lang, batch, batch_size)
        return
    load_pipeline(lang)  # loaded once here, inherited by the forked workers
    with multiprocessing.get_context("fork").Pool(n_process, initializer=_plain_worker) as pool:
        pending: deque = deque()
        for batch in batches:
            pending.append(pool.apply_async(annotate_batch, (lang, batch, batch_size)))
            if len(pending) >= 2 * n_process:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()


def annotate_chunks(
    store,
    lang: str,
    settings: Settings,
    run_id: str,
    chunk_ids: list[str] | None = None,
    progress: bool = True,
) -> int:
    """Run NER over chunks of ``lang`` whose current version has no annotation yet.

    ``chunk_ids`` limits the work to those chunks (already annotated versions are
    still skipped). Writes ``mentions``, ``entity_aliases`` and ``annotated_chunks``;
    returns the number of mentions written. ``settings.nlp.n_process`` worker
    processes (0: one per core; always 1 below a few hundred chunks).
    """
    load_pipeline(lang)  # a model problem fails before any work is exported
    path, total = _export_todo(store, lang, chunk_ids)
    written = 0
    try:
        if total == 0:
            return 0
        n_process = worker_count(settings, total)
        results = annotate_stream(lang, _stream(path), n_process, settings.nlp.batch_size)
        with store.writer(f"ner-{lang}", flush_rows=10**9, flush_seconds=float("inf")) as writer, _progress(progress) as bar:
            task = bar.add_task(f"NER ({lang}, {n_process} proc)", total=total) if bar else None
            since_checkpoint = 0
            for ctx, mentions, links in results:
                writer.append("mentions", (
                    {**m, "chunk_id": ctx["chunk_id"], "doc_id": ctx["doc_id"],
                     "content_hash": ctx["content_hash"], "run_id": run_id}
                    for m in mentions
                ))
                writer.append("entity_aliases", (
                    {"entity_key": link.entity_key, "alias_key": link.alias_key, "alias": link.alias,
                     "rule": link.rule, "evidence_chunk_id": ctx["chunk_id"],
                     "content_hash": ctx["content_hash"], "run_id": run_id}
                    for link in links
                ))
                writer.append("annotated_chunks", [
                    {"chunk_id": ctx["chunk_id"], "content_hash": ctx["content_hash"], "lang": lang,
                     "n_mentions": len(mentions), "run_id": run_id}
                ])
                written += len(mentions)
                since_checkpoint += 1
                if since_checkpoint >= CHECKPOINT_CHUNKS:
                    _checkpoint(writer)
                    since_checkpoint = 0
                if bar is not None:
                    bar.advance(task)
            _checkpoint(writer)
    finally:
        os.unlink(path)
    return written


def _checkpoint(writer) -> None:
    # mentions before markers: a crash in between only repeats work, never loses it
    for table in ("mentions", "entity_aliases", "annotated_chunks"):
        writer.flush(table)


class _NoProgress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(enabled: bool):
    if not enabled:
        return _NoProgress()
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=False
    )
