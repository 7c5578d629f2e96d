"""The benchmark folder's files: the one reader and writer that export, eval, audit and training use.

Layout (BEIR-style where BEIR has a convention, so BEIR's loader and
``datasets.load_dataset("json", ...)`` read an exported folder as is)::

    tasks.jsonl / tasks.parquet   accepted tasks with support, cell, difficulty, revisions
    corpus.jsonl                  {"_id", "title", "text", "doc_id"}: every chunk the index holds
    queries.jsonl                 {"_id", "text", "answer", "answers", "mechanic", "cell"}
    qrels/test.tsv                query-id, corpus-id, score (header line, tab separated)
    qrels.trec                    the same in TREC format: qid 0 docid rel

Reading takes the variations of folders the factory did not write: judgements in
``qrels/SPLIT.tsv`` (``--split``), ``qrels/test.tsv``, ``qrels.tsv`` or the only
``qrels/*.tsv``, each line ``query-id<TAB>corpus-id<TAB>score`` (a header line
allowed) or TREC's four columns; a record's optional fields may sit in a
``metadata`` object. A bad line is an error naming the file and the line.

TREC files split lines on whitespace, so an id holding whitespace or ``%`` (a text
file's relative path, a user's own ids) is written there percent-encoded (UTF-8) and
round-trips; ids without either (all ids the factory makes) are written as they are.
The BEIR files (tsv, jsonl) keep ids unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from factory.errors import FactoryError

CORPUS, QUERIES, TASKS, QRELS_TSV, QRELS_TREC = "corpus.jsonl", "queries.jsonl", "tasks.jsonl", "qrels/test.tsv", \
    "qrels.trec"
TASK_COLUMNS = [
    "task_id", "question", "answer", "answer_aliases", "support_chunk_ids", "support_doc_ids", "answer_chunk_id",
    "bridge_entities", "cell", "mechanic", "form", "answer_type", "lang", "revisions", "prunes", "attempts",
    "validators", "skipped_validators", "difficulty", "run_id",
]
_LIST_COLUMNS = {"answer_aliases", "support_chunk_ids", "support_doc_ids", "bridge_entities", "validators",
                 "skipped_validators"}
_INT_COLUMNS = {"revisions", "prunes", "attempts"}
_UNSAFE = re.compile(r"[\s%]")


class BenchmarkFolderError(FactoryError):
    pass


# ---------------------------------------------------------------- TREC ids
def trec_id(value: str) -> str:
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), str(value))


def from_trec_id(value: str) -> str:
    return unquote(value) if "%" in value else value


# --------------------------------------------------------------- records
def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a JSON-lines file; blank lines are skipped."""
    if not path.is_file():
        raise BenchmarkFolderError(f"{path}: not found (a benchmark folder has {CORPUS}, {QUERIES} and qrels)")
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchmarkFolderError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise BenchmarkFolderError(f"{path}:{number}: a record must be a JSON object")
            yield number, record


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def record_field(record: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` the record (or its ``metadata`` object) holds with a value."""
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    for name in names:
        if record.get(name) not in (None, "", []):
            return record[name]
        if meta.get(name) not in (None, "", []):
            return meta[name]
    return None


@dataclass
class Passage:
    chunk_id: str
    doc_id: str | None  # None: the record names no document
    title: str
    text: str


def read_corpus(path: Path) -> list[Passage]:
    passages: list[Passage] = []
    seen: set[str] = set()
    for number, record in read_jsonl(path):
        if "_id" not in record or not isinstance(record.get("text"), str):
            raise BenchmarkFolderError(f"{path}:{number}: a corpus record needs an _id and a text")
        cid = str(record["_id"])
        if not cid.strip():
            raise BenchmarkFolderError(f"{path}:{number}: empty _id")
        if cid in seen:
            raise BenchmarkFolderError(f"{path}:{number}: _id {cid!r} appears twice")
        seen.add(cid)
        doc = record_field(record, "doc_id")
        passages.append(Passage(cid, str(doc) if doc else None, str(record.get("title") or ""), record["text"]))
    if not passages:
        raise BenchmarkFolderError(f"{path}: no passages")
    return passages


@dataclass
class QueryRecord:
    where: str  # file:line, for messages about its fields
    qid: str
    text: str
    record: dict[str, Any]


def read_queries(path: Path) -> list[QueryRecord]:
    out: list[QueryRecord] = []
    known: set[str] = set()
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        if "_id" not in record:
            raise BenchmarkFolderError(f"{where}: a query needs an _id")
        qid = str(record["_id"])
        if qid in known:
            raise BenchmarkFolderError(f"{where}: query id {qid!r} appears twice")
        known.add(qid)
        if not isinstance(record.get("text"), str):
            raise BenchmarkFolderError(f"{where}: query {qid!r} has no text")
        out.append(QueryRecord(where, qid, record["text"], record))
    return out


def read_tasks(root: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """task id -> (file:line, record) of the folder's tasks.jsonl; empty when it has none."""
    path = root / TASKS
    if not path.is_file():
        return {}
    out = {}
    for number, record in read_jsonl(path):
        key = record.get("task_id") or record.get("_id")
        if not key:
            raise BenchmarkFolderError(f"{path}:{number}: a task needs a task_id")
        out[str(key)] = (f"{path}:{number}", record)
    return out


# -------------------------------------------------------------- judgements
def find_qrels(root: Path, split: str | None = None) -> Path:
    """The judgements file: qrels/SPLIT.tsv, else qrels/test.tsv, qrels.tsv, or the only qrels/*.tsv."""
    if split:
        path = root / "qrels" / f"{split}.tsv"
        if not path.is_file():
            raise BenchmarkFolderError(f"{path}: not found (--split {split})")
        return path
    for path in (root / QRELS_TSV, root / "qrels.tsv"):
        if path.is_file():
            return path
    found = sorted((root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(p.stem for p in found)
        raise BenchmarkFolderError(f"{root / 'qrels'}: several splits ({names}) and no test.tsv; choose one with --split")
    raise BenchmarkFolderError(f"{root}: no judgements (qrels/test.tsv, qrels.tsv or qrels/*.tsv)")


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> corpus id -> score, in file order."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 and len(line.split()) == 4:  # TREC: qid iteration docid relevance
                qid, _, cid, score = line.split()
                parts = [from_trec_id(qid), from_trec_id(cid), score]
            score = parts[-1].strip()
            if number == 1 and not score.lstrip("-").isdigit():
                continue  # header line
            if len(parts) != 3 or not score.lstrip("-").isdigit():
                raise BenchmarkFolderError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>score")
            qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = int(score)
    return qrels


# ----------------------------------------------------------------- writing
def write_tasks(out: Path, tasks: list[dict[str, Any]]) -> int:
    """tasks.jsonl and .parquet, queries.jsonl, qrels/test.tsv and qrels.trec; returns the judgements written."""
    write_jsonl(out / TASKS, tasks)
    # Parquet wants one type per column: difficulty figures vary by validator, so JSON text
    flat = [{**t, "difficulty": json.dumps(t["difficulty"], ensure_ascii=False, sort_keys=True)} for t in tasks]
    schema = pa.schema([
        (name, pa.list_(pa.string()) if name in _LIST_COLUMNS else pa.int32() if name in _INT_COLUMNS else pa.string())
        for name in TASK_COLUMNS
    ])
    pq.write_table(pa.Table.from_pylist(flat, schema=schema), out / "tasks.parquet")
    write_jsonl(out / QUERIES, (
        {"_id": t["task_id"], "text": t["question"], "answer": t["answer"], "answers": [t["answer"], *t["answer_aliases"]],
         "mechanic": t["mechanic"], "cell": t["cell"]}
        for t in tasks
    ))
    pairs = [(t["task_id"], cid) for t in tasks for cid in dict.fromkeys(t["support_chunk_ids"])]
    (out / "qrels").mkdir(exist_ok=True)
    with (out / QRELS_TSV).open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        handle.writelines(f"{q}\t{c}\t1\n" for q, c in pairs)
    with (out / QRELS_TREC).open("w", encoding="utf-8") as handle:
        handle.writelines(f"{trec_id(q)} 0 {trec_id(c)} 1\n" for q, c in pairs)
    return len(pairs)


def corpus_line(chunk_id: str, title: str | None, text: str | None, doc_id: str) -> str:
    """One line of corpus.jsonl."""
    return json.dumps({"_id": chunk_id, "title": title or "", "text": text or "", "doc_id": doc_id},
                      ensure_ascii=False) + "\n"
