"""Corpus readers: every kind of bad input names file and line, keeps the good records, strict stops."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.corpus.readers import CorpusError, CorpusReader

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _jsonl(path: Path, lines: list[bytes | str | dict]) -> Path:
    with open(path, "wb") as handle:
        for line in lines:
            if isinstance(line, dict):
                line = json.dumps(line, ensure_ascii=False)
            if isinstance(line, str):
                line = line.encode("utf-8")
            handle.write(line + b"\n")
    return path


def _read(path: Path, **options):
    reader = CorpusReader(path, "en", **options)
    docs = list(reader)
    return docs, reader


GOOD_A = {"id": "doc_a_1", "title": "A", "text": "Alpha text."}
GOOD_B = {"id": "doc_b_2", "title": "B", "text": "Beta text.", "topic": "x"}


@pytest.mark.parametrize(
    "bad, kind, words",
    [
        (b'{"id": "x", "text": "unterminated', "malformed_json", "malformed JSON"),
        (b"[1, 2, 3]", "malformed_json", "expected a JSON object"),
        (b'{"id": "x", "title": "no text"}', "missing_text", "has no 'text'"),
        (b'{"id": "x", "text": 42}', "missing_text", "must be a string"),
        (b'{"id": "x", "text": "   \\n "}', "empty_text", "empty text"),
        (b'{"title": "no id", "text": "body"}', "missing_id", "no 'id'"),
        (b'{"id": "x", "text": "caf\xe9 au lait"}', "bad_encoding", "not valid UTF-8"),
        (b'{"id": "x", "text": "lone \\ud800 surrogate"}', "bad_encoding", "UTF-8 cannot encode"),
        (b'{"id": "doc_a_1", "text": "again"}', "duplicate_id", "duplicate id 'doc_a_1'"),
    ],
)
def test_bad_line_is_reported_with_file_and_line_and_good_records_kept(tmp_path, bad, kind, words):
    path = _jsonl(tmp_path / "corpus.jsonl", [GOOD_A, bad, GOOD_B])
    docs, reader = _read(path)
    assert [d.id for d in docs] == ["doc_a_1", "doc_b_2"]
    assert len(reader.problems) == 1
    problem = reader.problems[0]
    assert problem.kind == kind
    assert problem.line == 2
    assert str(problem).startswith(f"{path}:2: ")
    assert words in str(problem)
    assert reader.problem_counts() == {kind: 1}


@pytest.mark.parametrize("bad", [b'{"id": "x", "text": ', b'{"id": "x", "text": "caf\xe9"}', b'{"id": "doc_a_1", "text": "dup"}'])
def test_strict_mode_raises_at_the_first_bad_record(tmp_path, bad):
    path = _jsonl(tmp_path / "c.jsonl", [GOOD_A, bad, GOOD_B])
    with pytest.raises(CorpusError, match=rf"{path}:2: .*strict"):
        _read(path, strict=True)


def test_good_records_keep_extra_fields_as_meta_and_blank_lines_are_ignored(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [GOOD_A, b"", b"   ", GOOD_B, {"id": 7, "text": "numeric id"}])
    docs, reader = _read(path)
    assert not reader.problems
    assert [d.id for d in docs] == ["doc_a_1", "doc_b_2", "7"]
    assert docs[1].meta == {"topic": "x"} and docs[0].meta == {}
    assert docs[1].source == str(path) and docs[1].lang == "en" and docs[1].title == "B"


def test_fixture_corpora_read_cleanly():
    for name, lang in (("corpus_en.jsonl", "en"), ("corpus_ru.jsonl", "ru")):
        reader = CorpusReader(FIXTURES / name, lang)
        docs = list(reader)
        assert len(docs) >= 20 and not reader.problems
        assert all(80 <= len(d.text.split()) <= 250 for d in docs)
        assert any("_" in d.id for d in docs)


def test_empty_file_and_missing_path(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    docs, reader = _read(empty)
    assert docs == [] and reader.problems[0].kind == "empty_file"
    assert str(empty) in str(reader.problems[0])
    with pytest.raises(CorpusError, match="empty file"):
        _read(empty, strict=True)
    with pytest.raises(CorpusError, match=r"nowhere\.jsonl: no such file"):
        CorpusReader(tmp_path / "nowhere.jsonl", "en")
    with pytest.raises(CorpusError, match="unsupported corpus file"):
        list(CorpusReader(_jsonl(tmp_path / "x.csv", [GOOD_A]), "en"))


def test_fifty_megabyte_document_is_skipped_with_a_message(tmp_path):
    """A 50 MB document over the default 20M-character limit: message, good records kept."""
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as handle:
        handle.write(json.dumps(GOOD_A).encode() + b"\n")
        handle.write(b'{"id": "huge_doc", "text": "' + b"word " * 10_000_000 + b'"}\n')
        handle.write(json.dumps(GOOD_B).encode() + b"\n")
    assert path.stat().st_size > 50_000_000
    tracemalloc.start()
    try:
        docs, reader = _read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [d.id for d in docs] == ["doc_a_1", "doc_b_2"]
    (problem,) = reader.problems
    assert problem.kind == "too_long" and problem.line == 2 and problem.doc_id == "huge_doc"
    assert "50,000,000 characters, over the limit of 20,000,000" in str(problem)
    # the record itself is in memory (bytes, text, parsed value) but nothing more
    assert peak < 200_000_000, peak


def test_overlong_line_is_skipped_unread(tmp_path):
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as handle:
        handle.write(b'{"id": "long", "text": "' + b"x" * 20_000_000 + b'"}\n')
        handle.write(json.dumps(GOOD_B).encode() + b"\n")
    tracemalloc.start()
    try:
        docs, reader = _read(path, max_doc_chars=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [d.id for d in docs] == ["doc_b_2"]
    assert reader.problems[0].kind == "too_long" and reader.problems[0].line == 1
    assert "skipped unread" in reader.problems[0].message
    assert peak < 5_000_000, peak  # never held the 20 MB line


def test_parquet_reader_streams_rows_and_reports_row_numbers(tmp_path):
    table = pa.table({
        "id": ["p_1", "p_2", "p_3"],
        "title": ["One", "Two", None],
        "text": ["First text.", None, "Third text."],
        "year": [1901, 1902, 1903],
    })
    path = tmp_path / "docs.parquet"
    pq.write_table(table, path)
    docs, reader = _read(path)
    assert [d.id for d in docs] == ["p_1", "p_3"]
    assert docs[0].meta == {"year": 1901} and docs[1].title == ""
    assert reader.problems[0].line == 2 and reader.problems[0].kind == "missing_text"
    pq.write_table(pa.table({"id": ["a"], "body": ["b"]}), tmp_path / "nobody.parquet")
    docs, reader = _read(tmp_path / "nobody.parquet")
    assert docs == [] and "no 'text' column" in str(reader.problems[0])


def test_text_folder_ids_are_relative_paths(tmp_path):
    (tmp_path / "corpus" / "sub").mkdir(parents=True)
    (tmp_path / "corpus" / "sub" / "a_b.txt").write_text("Plain text here.", encoding="utf-8")
    (tmp_path / "corpus" / "note.md").write_text("intro\n# The Heading\nBody.", encoding="utf-8")
    (tmp_path / "corpus" / "bad.txt").write_bytes(b"line one\nbroken \xff byte")
    (tmp_path / "corpus" / "ignored.bin").write_bytes(b"\x00")
    docs, reader = _read(tmp_path / "corpus")
    assert {d.id: d.title for d in docs} == {"note.md": "The Heading", "sub/a_b.txt": "a_b"}
    (problem,) = reader.problems
    assert problem.kind == "bad_encoding" and problem.line == 2 and problem.source.endswith("bad.txt")


def test_folder_mixes_formats_and_gzip(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    with gzip.open(folder / "part1.jsonl.gz", "wb") as handle:
        handle.write(json.dumps(GOOD_A).encode() + b"\n")
    _jsonl(folder / "part2.jsonl", [GOOD_B, GOOD_A])  # GOOD_A again: a duplicate across files
    docs, reader = _read(folder)
    assert [d.id for d in docs] == ["doc_a_1", "doc_b_2"]
    assert reader.problems[0].kind == "duplicate_id" and reader.problems[0].source.endswith("part2.jsonl")


def test_wikipedia_style_json(tmp_path):
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps({
        "Kell Island": {"title": "Kell Island", "extract": "An island.", "topic": "Geography"},
        "Empty": {"title": "Empty", "extract": ""},
    }), encoding="utf-8")
    docs, reader = _read(path)
    assert [(d.id, d.title, d.text, d.meta) for d in docs] == [("Kell Island", "Kell Island", "An island.", {"topic": "Geography"})]
    assert reader.problems[0].kind == "empty_text" and reader.problems[0].line == 2
    (tmp_path / "list.json").write_text(json.dumps([{"pageid": 12, "title": "T", "text": "Body."}]), encoding="utf-8")
    assert [d.id for d in CorpusReader(tmp_path / "list.json", "en")] == ["12"]
    (tmp_path / "broken.json").write_text('{"a": ', encoding="utf-8")
    docs, reader = _read(tmp_path / "broken.json")
    assert docs == [] and reader.problems[0].kind == "malformed_json"


def test_damaged_gzip_keeps_what_was_read(tmp_path):
    data = gzip.compress(b"".join(json.dumps(d).encode() + b"\n" for d in (GOOD_A, GOOD_B)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) - 12])  # the end of the stream is missing
    docs, reader = _read(path)
    assert reader.problems[0].kind == "unreadable" and str(path) in str(reader.problems[0])
    assert [d.id for d in docs] in ([], ["doc_a_1"], ["doc_a_1", "doc_b_2"])
