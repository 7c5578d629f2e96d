"""Reading a benchmark the factory did not write: a BEIR-style folder, or one we exported.

The folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``, optional ``doc_id``),
``queries.jsonl`` (``_id``, ``text``, optional ``answer`` / ``answers``,
``answer_aliases``, ``bridge_entities``, ``answer_chunk_id``, ``cell``; the same keys
are also read from a ``metadata`` object) and judgements in ``qrels/test.tsv``,
``qrels.tsv`` or the only ``qrels/*.tsv`` (``--split`` picks ``qrels/NAME.tsv``):
``query-id<TAB>corpus-id<TAB>score`` with an optional header, or TREC's four columns.
A folder the factory exported also has ``tasks.jsonl``, whose answers, aliases, bridge
entities and answer chunk are merged into its queries by id.

Only queries with at least one positive judgement are audited; the rest are counted.
A bad line is an error naming the file and the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from factory.errors import FactoryError
from factory.trec import from_trec_id


class AuditInputError(FactoryError):
    pass


@dataclass
class Passage:
    chunk_id: str
    doc_id: str
    title: str
    text: str


@dataclass
class AuditQuestion:
    qid: str
    text: str
    answers: list[str] = field(default_factory=list)  # the reference answer first, then aliases
    support: list[str] = field(default_factory=list)  # positively judged corpus ids, in qrels order
    bridge_entities: list[str] = field(default_factory=list)
    answer_chunk_id: str | None = None
    cell: str = ""

    @property
    def answer(self) -> str:
        return self.answers[0] if self.answers else ""


@dataclass
class AuditInput:
    root: Path
    corpus_path: Path
    qrels_path: Path
    questions: list[AuditQuestion]
    passages: list[Passage]
    unjudged_queries: int = 0
    stray_judgements: int = 0  # judgements for query ids not in queries.jsonl
    has_tasks: bool = False
    notes: list[str] = field(default_factory=list)


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise AuditInputError(f"{path}: not found (a benchmark folder has corpus.jsonl, queries.jsonl and qrels)")
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AuditInputError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise AuditInputError(f"{path}:{number}: a record must be a JSON object")
            yield number, record


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value if str(v).strip()]
    raise AuditInputError(f"{where}: expected a string or a list of strings, got {type(value).__name__}")


def _field(record: dict[str, Any], *names: str) -> Any:
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    for name in names:
        if record.get(name) not in (None, "", []):
            return record[name]
        if meta.get(name) not in (None, "", []):
            return meta[name]
    return None


def find_qrels(root: Path, split: str | None = None) -> Path:
    """The judgements file: qrels/SPLIT.tsv, else qrels/test.tsv, qrels.tsv, or the only qrels/*.tsv."""
    if split:
        path = root / "qrels" / f"{split}.tsv"
        if not path.is_file():
            raise AuditInputError(f"{path}: not found (--split {split})")
        return path
    for path in (root / "qrels" / "test.tsv", root / "qrels.tsv"):
        if path.is_file():
            return path
    found = sorted((root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(p.stem for p in found)
        raise AuditInputError(f"{root / 'qrels'}: several splits ({names}) and no test.tsv; choose one with --split")
    raise AuditInputError(f"{root}: no judgements (qrels/test.tsv, qrels.tsv or qrels/*.tsv)")


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                parts = line.split()
                if len(parts) == 4:  # TREC: qid iteration docid relevance (ids percent-encoded if needed)
                    parts = [from_trec_id(parts[0]), from_trec_id(parts[2]), parts[3]]
            score = parts[-1].strip() if parts else ""
            if number == 1 and not score.lstrip("-").isdigit():
                continue  # header line
            if len(parts) != 3 or not score.lstrip("-").isdigit():
                raise AuditInputError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>score")
            qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = int(score)
    return qrels


def read_corpus(path: Path) -> list[Passage]:
    passages: list[Passage] = []
    seen: set[str] = set()
    for number, record in _jsonl(path):
        if "_id" not in record or not isinstance(record.get("text"), str):
            raise AuditInputError(f"{path}:{number}: a corpus record needs an _id and a text")
        cid = str(record["_id"])
        if not cid.strip():
            raise AuditInputError(f"{path}:{number}: empty _id")
        if cid in seen:
            raise AuditInputError(f"{path}:{number}: _id {cid!r} appears twice")
        seen.add(cid)
        doc = _field(record, "doc_id")
        passages.append(Passage(cid, str(doc) if doc else cid, str(record.get("title") or ""), record["text"]))
    if not passages:
        raise AuditInputError(f"{path}: no passages")
    return passages


def _tasks(root: Path) -> dict[str, dict[str, Any]]:
    path = root / "tasks.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for number, record in _jsonl(path):
        key = record.get("task_id") or record.get("_id")
        if not key:
            raise AuditInputError(f"{path}:{number}: a task needs a task_id")
        out[str(key)] = record
    return out


def load_audit_input(root: str | Path, split: str | None = None) -> AuditInput:
    root = Path(root).resolve()
    if not root.is_dir():
        raise AuditInputError(f"{root}: no benchmark folder here")
    qrels_path = find_qrels(root, split)
    qrels = read_qrels(qrels_path)
    tasks = _tasks(root)
    queries_path = root / "queries.jsonl"
    questions: list[AuditQuestion] = []
    unjudged = 0
    known: set[str] = set()
    for number, record in _jsonl(queries_path):
        where = f"{queries_path}:{number}"
        if "_id" not in record:
            raise AuditInputError(f"{where}: a query needs an _id")
        qid = str(record["_id"])
        if qid in known:
            raise AuditInputError(f"{where}: query id {qid!r} appears twice")
        known.add(qid)
        text = record.get("text")
        if not isinstance(text, str):
            raise AuditInputError(f"{where}: query {qid!r} has no text")
        task = tasks.get(qid, {})
        answers = _strings(_field(record, "answer"), where) + _strings(_field(record, "answers"), where)
        answers += _strings(task.get("answer"), f"tasks.jsonl {qid}") + _strings(_field(record, "answer_aliases"), where)
        answers += _strings(task.get("answer_aliases"), f"tasks.jsonl {qid}")
        bridges = _strings(_field(record, "bridge_entities"), where) + _strings(task.get("bridge_entities"), f"tasks.jsonl {qid}")
        support = [cid for cid, rel in qrels.get(qid, {}).items() if rel > 0]
        if not support:
            unjudged += 1
            continue
        answer_chunk = _field(record, "answer_chunk_id") or task.get("answer_chunk_id")
        cell = _field(record, "cell") or task.get("cell") or ""
        questions.append(AuditQuestion(
            qid=qid, text=text, answers=list(dict.fromkeys(a.strip() for a in answers)), support=support,
            bridge_entities=list(dict.fromkeys(bridges)), answer_chunk_id=str(answer_chunk) if answer_chunk else None,
            cell=str(cell),
        ))
    if not questions:
        raise AuditInputError(f"{queries_path}: no query has a positive judgement in {qrels_path}")
    stray = sum(1 for q in qrels if q not in known)
    notes = []
    if unjudged:
        notes.append(f"{unjudged} queries have no positive judgement in {qrels_path.name} and were not audited")
    if stray:
        notes.append(f"{stray} judged query ids are not in queries.jsonl and were ignored")
    return AuditInput(
        root=root, corpus_path=root / "corpus.jsonl", qrels_path=qrels_path, questions=questions,
        passages=read_corpus(root / "corpus.jsonl"), unjudged_queries=unjudged, stray_judgements=stray,
        has_tasks=bool(tasks), notes=notes,
    )
