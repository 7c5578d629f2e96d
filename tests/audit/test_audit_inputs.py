"""Reading outside benchmarks: BEIR folders, qrels variants, exported folders, bad lines."""

from __future__ import annotations

import json

import pytest

from factory.audit.checks import answer_chunk_ids, to_draft
from factory.audit.inputs import AuditInputError, AuditQuestion, load_audit_input

from audit_folder import write_folder


def test_beir_folder_becomes_questions(tmp_path):
    data = load_audit_input(write_folder(tmp_path / "b"))
    by_id = {q.qid: q for q in data.questions}
    assert sorted(by_id) == ["q1", "q2", "q3", "q4", "q5"]  # q6 has no judgement
    assert data.unjudged_queries == 1 and "1 queries have no positive judgement" in data.notes[0]
    assert by_id["q1"].support == ["d1_0"]  # the score-0 judgement is not support
    assert by_id["q2"].answers == ["forty-two", "42"]
    assert by_id["q2"].bridge_entities == ["Tobias Quell", "Greyfen aqueduct"]
    assert by_id["q5"].bridge_entities == ["Tobias Quell"]  # read from metadata
    assert by_id["q3"].answers == [] and by_id["q3"].answer == ""
    assert len(data.passages) == 10 and data.passages[1].doc_id == "d1"


@pytest.mark.parametrize("name", ["qrels.tsv", "qrels/dev.tsv"])
def test_qrels_elsewhere(tmp_path, name):
    data = load_audit_input(write_folder(tmp_path / "b", qrels_name=name))
    assert data.qrels_path.relative_to(tmp_path / "b").as_posix() == name
    assert len(data.questions) == 5


def test_several_splits_need_a_choice(tmp_path):
    root = write_folder(tmp_path / "b", qrels_name="qrels/dev.tsv")
    (root / "qrels" / "train.tsv").write_text("q1\td1_0\t1\n", encoding="utf-8")
    with pytest.raises(AuditInputError, match="several splits"):
        load_audit_input(root)
    assert [q.qid for q in load_audit_input(root, split="train").questions] == ["q1"]
    with pytest.raises(AuditInputError, match="--split nope"):
        load_audit_input(root, split="nope")


def test_trec_qrels_are_read(tmp_path):
    root = write_folder(tmp_path / "b")
    (root / "qrels" / "test.tsv").write_text("q1 0 d1_0 1\nq2 0 d3_0 2\n", encoding="utf-8")
    data = load_audit_input(root)
    assert {q.qid: q.support for q in data.questions} == {"q1": ["d1_0"], "q2": ["d3_0"]}


@pytest.mark.parametrize("file,line,expect", [
    ("corpus.jsonl", "{not json", "corpus.jsonl:11: not JSON"),
    ("corpus.jsonl", json.dumps({"_id": "d1_0", "text": "again"}), "appears twice"),
    ("queries.jsonl", json.dumps({"_id": "q9"}), "queries.jsonl:7: query 'q9' has no text"),
    ("queries.jsonl", json.dumps({"_id": "q9", "text": "x", "answers": {"a": 1}}), "queries.jsonl:7: expected a string"),
    ("qrels/test.tsv", "q1\td1_0\tmaybe", "test.tsv:11: expected query-id"),
])
def test_bad_lines_name_file_and_line(tmp_path, file, line, expect):
    root = write_folder(tmp_path / "b")
    with open(root / file, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    with pytest.raises(AuditInputError, match=expect):
        load_audit_input(root)


def test_exported_folder_merges_tasks(tmp_path):
    root = write_folder(tmp_path / "b")
    task = {"task_id": "q3", "answer": "the Greyfen aqueduct", "answer_aliases": ["Greyfen aqueduct"],
            "bridge_entities": ["Tobias Quell"], "answer_chunk_id": "d2_0", "cell": "chain/what/work"}
    (root / "tasks.jsonl").write_text(json.dumps(task) + "\n", encoding="utf-8")
    data = load_audit_input(root)
    q3 = next(q for q in data.questions if q.qid == "q3")
    assert data.has_tasks
    assert q3.answers == ["the Greyfen aqueduct", "Greyfen aqueduct"]
    assert q3.answer_chunk_id == "d2_0" and q3.bridge_entities == ["Tobias Quell"]
    draft = to_draft(q3, "en", ["d2_0"])
    assert draft.cell.key == "chain/what/work" and draft.answer_aliases == ["Greyfen aqueduct"]


def test_answer_chunk_rules():
    texts = {"a": "The aqueduct stands on forty-two arches.", "b": "Quell designed it.", "c": "Forty-Two arches again."}
    q = AuditQuestion("q", "How many arches?", answers=["forty-two"], support=["a", "b", "c"])
    assert answer_chunk_ids(q, "auto", texts, "en") == ["a", "c"]  # the passages that hold the answer
    assert answer_chunk_ids(q, "all", texts, "en") == ["a", "b", "c"]
    assert answer_chunk_ids(q, "none", texts, "en") == []
    q.answer_chunk_id = "b"
    assert answer_chunk_ids(q, "auto", texts, "en") == ["b"]  # given by the benchmark
    single = AuditQuestion("s", "?", answers=[], support=["b"])
    assert answer_chunk_ids(single, "auto", texts, "en") == ["b"]  # one passage answers a single-hop question
    unanswered = AuditQuestion("u", "?", answers=[], support=["a", "b"])
    assert answer_chunk_ids(unanswered, "auto", texts, "en") == []
    draft = to_draft(unanswered, "en", [])
    assert draft.cell.key == "audit/unknown/unknown" and draft.answer_chunk_id is None
