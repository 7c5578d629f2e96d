"""Exporting a build: everything needed to evaluate a retriever on its tasks, in one folder.

The folder's files are written by ``factory.benchmark_folder`` (which also reads them
for eval, audit and training), plus what only an export has::

    tasks.jsonl / tasks.parquet   accepted tasks with support, cell, difficulty, revisions
    corpus.jsonl                  {"_id", "title", "text", "doc_id"}: every chunk the index holds
    chunks.parquet                the same chunks with their document mapping and hashes
    queries.jsonl                 {"_id", "text", "answer", "answers", "mechanic", "cell"}
    qrels/test.tsv                query-id, corpus-id, score (header line, tab separated)
    qrels.trec                    the same in TREC format: qid 0 docid rel
    index/                        the fixed indices and their manifest, as validated against
    settings.json                 the resolved settings and build parameters
    card.md, card.html, plots/    the card
    LICENSE                       the corpus licence and attribution (plus the corpus' own notices)

The exported corpus is every chunk of the language in the store, which is what the
fixed index is built over, so ``factory eval`` can open ``DIR/index`` against
``DIR/corpus.jsonl``.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from factory.benchmark_folder import corpus_line, write_tasks
from factory.card import CardData, write_card
from factory.errors import FactoryError
from factory.settings import Settings
from factory.store import Store, json_value
from factory.store.funnel import candidate_outcomes, validator_funnel

BATCH_ROWS = 20_000
CORPUS_NOTICE_PREFIXES = ("license", "licence", "copying", "notice", "attribution", "readme")


class ExportError(FactoryError):
    pass


class ExportSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: str
    run_id: str
    lang: str
    tasks: int
    chunks: int
    documents: int
    qrels: int
    files: list[str] = Field(default_factory=list)


def load_tasks(store: Store, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Accepted tasks of a run, in candidate order (the first ``limit``), with support documents mapped."""
    rows = store.query(
        "SELECT t.*, c.idx AS _idx FROM accepted_tasks t LEFT JOIN candidates c ON c.candidate_id = t.candidate_id "
        "WHERE t.run_id = ? ORDER BY c.idx NULLS LAST, t.task_id LIMIT ?",
        [run_id, limit if limit is not None else 1 << 62],
    )
    chunk_ids = sorted({cid for r in rows for cid in (r.get("support_chunk_ids") or [])})
    doc_of = {}
    if chunk_ids:
        doc_of = {
            r["chunk_id"]: r["doc_id"]
            for r in store.query("SELECT chunk_id, doc_id FROM chunks WHERE chunk_id IN (SELECT unnest(?))", [chunk_ids])
        }
    tasks = []
    for row in rows:
        support = list(row.get("support_chunk_ids") or [])
        task = {
            "task_id": row["task_id"],
            "question": row.get("question") or "",
            "answer": row.get("answer") or "",
            "answer_aliases": list(row.get("answer_aliases") or []),
            "support_chunk_ids": support,
            "support_doc_ids": list(dict.fromkeys(doc_of.get(c, "") for c in support)),
            "answer_chunk_id": row.get("answer_chunk_id"),
            "bridge_entities": list(row.get("bridge_entities") or []),
            "cell": row.get("cell") or "",
            "mechanic": row.get("mechanic") or "",
            "form": row.get("form") or "",
            "answer_type": row.get("answer_type") or "",
            "lang": row.get("lang") or "",
            "revisions": int(row.get("revisions") or 0),
            "prunes": int(row.get("prunes") or 0),
            "attempts": int(row.get("attempts") or 0),
            "validators": list(row.get("validators") or []),
            "skipped_validators": list(row.get("skipped_validators") or []),
            "difficulty": json_value(row.get("difficulty")) or {},
            "run_id": row.get("run_id") or run_id,
        }
        tasks.append(task)
    return tasks


def write_corpus(store: Store, out: Path, lang: str) -> tuple[int, int]:
    """Stream every chunk of ``lang`` to corpus.jsonl and chunks.parquet; returns (chunks, documents)."""
    sql = (
        "SELECT chunk_id, doc_id, n, lang, title, text, content_hash, n_tokens, char_start, char_end "
        "FROM chunks WHERE lang = ? ORDER BY chunk_id"
    )
    con = store.connect()
    chunks = 0
    docs: set[str] = set()
    writer: pq.ParquetWriter | None = None
    try:
        reader = con.sql(sql, params=[lang]).to_arrow_reader(BATCH_ROWS)
        with (out / "corpus.jsonl").open("w", encoding="utf-8") as handle:
            for batch in reader:
                if writer is None:
                    writer = pq.ParquetWriter(out / "chunks.parquet", batch.schema)
                writer.write_batch(batch)
                for row in batch.to_pylist():
                    handle.write(corpus_line(row["chunk_id"], row["title"], row["text"], row["doc_id"]))
                    docs.add(row["doc_id"])
                    chunks += 1
    finally:
        if writer is not None:
            writer.close()
        con.close()
    if chunks == 0:
        raise ExportError(f"{store.root}: no {lang} chunks in the store; nothing to export")
    return chunks, len(docs)


def copy_index(store: Store, index_dir: Path, out: Path) -> None:
    """Copy the fixed index after checking it against the store; then check the copy
    against the exported corpus.jsonl, exactly as ``factory eval`` will open it."""
    from factory.index.fixed import open_index

    open_index(Path(index_dir), store=store)
    target = out / "index"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(index_dir, target)
    open_index(target, corpus_path=out / "corpus.jsonl")


def write_license(out: Path, settings: Settings, corpus_path: str | None) -> tuple[str, str, list[str]]:
    """LICENSE with the corpus licence and attribution; copies the corpus folder's notices.

    Returns (licence, attribution, copied notices); without a configured attribution,
    an ATTRIBUTION file shipped with the corpus (as `factory corpus pull` writes) is used.
    """
    copied: list[str] = []
    attribution = settings.build.corpus_attribution.strip()
    if corpus_path:
        folder = Path(corpus_path).resolve().parent
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.is_file() and path.name.lower().startswith(CORPUS_NOTICE_PREFIXES) and path.stat().st_size < 1_000_000:
                target = out / "corpus_notices" / path.name
                target.parent.mkdir(exist_ok=True)
                shutil.copyfile(path, target)
                copied.append(target.relative_to(out).as_posix())
                if not attribution and path.name.lower().startswith("attribution"):
                    attribution = path.read_text(encoding="utf-8", errors="replace").strip()[:2000]
    licence = settings.build.corpus_license.strip()
    if not licence:
        licence = ("as stated in the corpus notices below" if copied
                   else "NOT STATED: set build.corpus_license; check the source before redistributing")
    lines = [
        "The questions, answers and annotations in this folder were generated by the search-task factory",
        "from the corpus below. The corpus text (corpus.jsonl, chunks.parquet, index/) keeps the corpus licence.",
        "",
        f"Corpus: {corpus_path or 'unknown'}",
        f"Corpus licence: {licence}",
    ]
    if settings.build.corpus_attribution.strip():
        lines.append(f"Attribution: {settings.build.corpus_attribution.strip()}")
    if copied:
        lines += ["", "Notices shipped with the corpus, copied unchanged:", *[f"  {c}" for c in copied]]
    (out / "LICENSE").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return licence, attribution, copied


def _run_figures(store: Store, run_id: str, order: list[str] | None = None) -> dict[str, Any]:
    from factory.cost import run_cost

    outcomes = candidate_outcomes(store, run_id)
    cost = run_cost(store, run_id)
    cells = {r["cell"]: r["n"] for r in store.query(
        "SELECT cell, count(*) AS n FROM candidates WHERE run_id = ? AND cell IS NOT NULL GROUP BY cell", [run_id]
    )}
    llm = store.query(
        "SELECT backend, model, count(*) AS calls, coalesce(sum(tokens_in), 0) AS tokens_in, "
        "coalesce(sum(tokens_out), 0) AS tokens_out FROM llm_calls WHERE run_id = ? GROUP BY backend, model "
        "ORDER BY backend, model",
        [run_id],
    )
    notes = []
    for row in store.query(
        "SELECT validator, count(*) AS n, mode(coalesce(nullif(feedback, ''), reason)) AS why FROM verdicts "
        "WHERE run_id = ? GROUP BY validator HAVING bool_and(skipped) ORDER BY validator", [run_id]
    ):
        notes.append(f"{row['validator']} did not run on any of {row['n']} drafts ({row['why']}); "
                     "a skipped validator never counts as passed")
    return {
        "notes": notes,
        "funnel": validator_funnel(store, run_id, order),
        "candidates": {
            "started": outcomes["accepted"] + outcomes["rejected"] + outcomes["running"],
            "accepted": outcomes["accepted"],
            "rejected": outcomes["rejected"],
            "in_flight": outcomes["running"],
        },
        "rejected_by": outcomes["rejected_by"],
        "attempted_cells": cells,
        "llm_models": [f"{r['backend']}:{r['model']}" for r in llm],
        "llm_calls": sum(r["calls"] for r in llm),
        "tokens_in": int(sum(r["tokens_in"] for r in llm)),
        "tokens_out": int(sum(r["tokens_out"] for r in llm)),
        "cost": cost.as_dict(),
    }


def _taxonomy_axes(lang: str, taxonomy_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """The card's coverage axes: the mechanics and answer types the run's taxonomy offers in ``lang``."""
    try:
        from factory.taxonomy import load_taxonomy

        taxonomy = load_taxonomy(taxonomy_dir)
    except (ImportError, FactoryError):
        return [], []
    return (
        [n for n, m in taxonomy.mechanics.items() if m.offered(lang)],
        [n for n, a in taxonomy.answer_types.items() if a.offered(lang)],
    )


def export_benchmark(
    store: Store,
    index_dir: Path,
    out_dir: Path,
    run_id: str,
    settings: Settings,
    *,
    lang: str | None = None,
    corpus_path: str | None = None,
    name: str | None = None,
    params: dict[str, Any] | None = None,
    cached_calls: int = 0,
    notes: list[str] | None = None,
    limit: int | None = None,
) -> ExportSummary:
    """Write the benchmark folder for ``run_id`` into ``out_dir`` (files replaced, folder kept).

    ``params`` (the build's own parameters: n, llm spec, profile, ...) go to
    settings.json next to the resolved settings. ``limit``: export the first tasks in
    candidate order only (candidates still in flight when the target was reached can
    push the accepted count past it).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lang = lang or settings.lang
    tasks = load_tasks(store, run_id, limit)
    n_qrels = write_tasks(out, tasks)
    chunks, documents = write_corpus(store, out, lang)
    copy_index(store, Path(index_dir), out)
    resolved = settings.model_dump(mode="json")
    (out / "settings.json").write_text(
        json.dumps({"run_id": run_id, "params": params or {}, "settings": resolved}, indent=2, sort_keys=True,
                   ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    licence, attribution, notices = write_license(out, settings, corpus_path)
    figures = _run_figures(store, run_id, list(settings.validation.order))
    mechanics, answer_types = _taxonomy_axes(lang, settings.compose.taxonomy_dir)
    files = ["tasks.jsonl", "tasks.parquet", "corpus.jsonl", "chunks.parquet", "queries.jsonl", "qrels/test.tsv",
             "qrels.trec", "index/", "settings.json", "card.md", "card.html", "plots/", "LICENSE", *notices]
    card = CardData(
        name=name or out.name,
        lang=lang,
        run_id=run_id,
        built_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        target_n=int((params or {}).get("n") or settings.build.n),
        llm_spec=str((params or {}).get("llm_spec") or settings.llm.spec),
        llm_cached_calls=cached_calls,
        corpus_path=corpus_path or "",
        corpus_documents=documents,
        corpus_chunks=chunks,
        corpus_license=licence,
        corpus_attribution=attribution,
        profile=settings.build.profile,
        profile_overrides=settings.build.overrides(),
        settings=resolved,
        tasks=tasks,
        mechanics=mechanics,
        answer_types=answer_types,
        examples_per_mechanic=settings.build.examples_per_mechanic,
        files=files,
        **{**figures, "notes": [*(notes or []), *figures["notes"]]},
    )
    written = write_card(card, out)
    all_files = sorted({*files, *(p.relative_to(out).as_posix() for p in written)})
    return ExportSummary(
        out_dir=str(out), run_id=run_id, lang=lang, tasks=len(tasks), chunks=chunks, documents=documents,
        qrels=n_qrels, files=all_files,
    )
