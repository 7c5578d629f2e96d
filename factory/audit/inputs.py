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

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from factory.benchmark_folder import (
    BenchmarkFolderError, Passage, find_qrels, read_corpus, read_qrels, read_queries, read_tasks, record_field,
)


AuditInputError = BenchmarkFolderError  # the folder reader's errors are the audit's input errors


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


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value if str(v).strip()]
    raise AuditInputError(f"{where}: expected a string or a list of strings, got {type(value).__name__}")


def load_audit_input(root: str | Path, split: str | None = None) -> AuditInput:
    root = Path(root).resolve()
    if not root.is_dir():
        raise AuditInputError(f"{root}: no benchmark folder here")
    qrels_path = find_qrels(root, split)
    qrels = read_qrels(qrels_path)
    tasks = read_tasks(root)
    queries_path = root / "queries.jsonl"
    questions: list[AuditQuestion] = []
    unjudged = 0
    queries = read_queries(queries_path)
    for query in queries:
        qid, record, where = query.qid, query.record, query.where
        task_where, task = tasks.get(qid, (f"tasks.jsonl {qid}", {}))
        answers = _strings(record_field(record, "answer"), where) + _strings(record_field(record, "answers"), where)
        answers += _strings(task.get("answer"), task_where) + _strings(record_field(record, "answer_aliases"), where)
        answers += _strings(task.get("answer_aliases"), task_where)
        bridges = _strings(record_field(record, "bridge_entities"), where) + _strings(task.get("bridge_entities"),
                                                                                     task_where)
        support = [cid for cid, rel in qrels.get(qid, {}).items() if rel > 0]
        if not support:
            unjudged += 1
            continue
        answer_chunk = record_field(record, "answer_chunk_id") or task.get("answer_chunk_id")
        cell = record_field(record, "cell") or task.get("cell") or ""
        questions.append(AuditQuestion(
            qid=qid, text=query.text, answers=list(dict.fromkeys(a.strip() for a in answers)), support=support,
            bridge_entities=list(dict.fromkeys(bridges)), answer_chunk_id=str(answer_chunk) if answer_chunk else None,
            cell=str(cell),
        ))
    if not questions:
        raise AuditInputError(f"{queries_path}: no query has a positive judgement in {qrels_path}")
    known = {q.qid for q in queries}
    stray = sum(1 for q in qrels if q not in known)
    notes = []
    if unjudged:
        notes.append(f"{unjudged} queries have no positive judgement in {qrels_path.name} and were not audited")
    if stray:
        notes.append(f"{stray} judged query ids are not in queries.jsonl and were ignored")
    return AuditInput(
        root=root, corpus_path=root / "corpus.jsonl", qrels_path=qrels_path, questions=questions,
        passages=[replace(p, doc_id=p.doc_id or p.chunk_id) for p in read_corpus(root / "corpus.jsonl")], unjudged_queries=unjudged, stray_judgements=stray,
        has_tasks=bool(tasks), notes=notes,
    )
