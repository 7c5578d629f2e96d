"""The ingest pipeline (entities off): stored rows, idempotent reruns, changed documents, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.corpus.readers import CorpusError
from factory.ingest import ingest
from factory.settings import load_settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _docs(lang: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines()]


def _write(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


def _segment_rows(store, table: str) -> int:
    return store.scalar(f'SELECT count(*) FROM "{table}__segments"')


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_fixture_corpus_is_stored_with_run_settings(store, lang):
    settings = load_settings(**{"ingest.chunk_tokens": 60})
    summary = ingest(FIXTURES / f"corpus_{lang}.jsonl", store, lang, settings, entities=False)
    docs = _docs(lang)
    assert summary.docs_read == summary.docs_new == len(docs) and summary.docs_unchanged == 0
    assert summary.skipped == {} and summary.words == sum(len(d["text"].split()) for d in docs)
    stored = {r["doc_id"]: r for r in store.query("SELECT * FROM documents")}
    assert set(stored) == {d["id"] for d in docs}
    chunks = store.query("SELECT chunk_id, doc_id, n, text, n_tokens, lang FROM chunks ORDER BY doc_id, n")
    assert len(chunks) == summary.chunks_written == sum(r["n_chunks"] for r in stored.values())
    assert all(c["chunk_id"] == f"{c['doc_id']}_{c['n']}" and c["lang"] == lang and c["n_tokens"] <= 60 for c in chunks)
    texts = {d["id"]: d["text"] for d in docs}
    by_doc: dict[str, list[str]] = {}
    for c in chunks:
        by_doc.setdefault(c["doc_id"], []).append(c["text"])
    assert all(" ".join(by_doc[i]).split() == texts[i].split() for i in texts)
    run = store.query("SELECT * FROM runs WHERE run_id = ?", [summary.run_id])[0]
    assert run["command"] == "ingest" and json.loads(run["settings"]) == json.loads(settings.dump())
    assert json.loads(run["settings"])["ingest"]["chunk_tokens"] == 60


def test_rerun_adds_nothing_and_changes_no_ids(store, tmp_path):
    corpus = FIXTURES / "corpus_en.jsonl"
    settings = load_settings(**{"ingest.chunk_tokens": 50})
    first = ingest(corpus, store, "en", settings, entities=False)
    before = {t: _segment_rows(store, t) for t in ("documents", "chunks", "chunk_changes", "near_duplicates")}
    ids = store.query("SELECT chunk_id, content_hash FROM chunks ORDER BY chunk_id")
    second = ingest(corpus, store, "en", settings, entities=False)
    assert second.docs_unchanged == first.docs_new and second.docs_new == second.docs_changed == 0
    assert second.chunks_written == 0
    assert {t: _segment_rows(store, t) for t in before} == before
    assert store.query("SELECT chunk_id, content_hash FROM chunks ORDER BY chunk_id") == ids
    # another chunk size re-chunks everything: those documents count as changed
    third = ingest(corpus, store, "en", load_settings(**{"ingest.chunk_tokens": 80}), entities=False)
    assert third.docs_changed == first.docs_new


def test_changed_document_marks_changed_and_removed_chunks(store, tmp_path):
    docs = _docs("en")
    settings = load_settings(**{"ingest.chunk_tokens": 30})
    corpus = _write(tmp_path / "c.jsonl", docs)
    ingest(corpus, store, "en", settings, entities=False)
    target = "en_place_001"
    old = {r["chunk_id"]: r["content_hash"] for r in store.query("SELECT chunk_id, content_hash FROM chunks WHERE doc_id = ?", [target])}
    assert len(old) >= 4

    sentences = docs[0]["text"].split(". ")
    sentences[-1] = "Its best known natives include a novelist and a composer."  # change the last sentence
    edited = ". ".join(sentences[:4] + [sentences[-1]])  # and drop the middle: the document shrinks
    docs[0]["text"] = edited
    summary = ingest(_write(corpus, docs), store, "en", settings, entities=False)
    assert summary.docs_changed == 1 and summary.docs_unchanged == len(docs) - 1
    new = {
        r["chunk_id"]: r["content_hash"]
        for r in store.query(
            "SELECT c.chunk_id, c.content_hash FROM chunks c JOIN documents d USING (doc_id) WHERE c.doc_id = ? AND c.n < d.n_chunks",
            [target],
        )
    }
    assert len(new) < len(old)
    changes = {r["chunk_id"]: r for r in store.query("SELECT * FROM chunk_changes WHERE run_id = ?", [summary.run_id])}
    expected_modified = {c for c in new if new[c] != old[c]}
    expected_removed = set(old) - set(new)
    assert expected_modified and expected_removed
    assert {c for c, r in changes.items() if r["change"] == "modified"} == expected_modified
    assert {c for c, r in changes.items() if r["change"] == "removed"} == expected_removed
    assert all(r["old_hash"] == old[c] and r["new_hash"] == new.get(c) and r["doc_id"] == target for c, r in changes.items())
    assert summary.chunks_modified == len(expected_modified) and summary.chunks_removed == len(expected_removed)
    # unchanged chunks of the changed document keep their id and hash, and get no change row
    assert all(c not in changes for c in new if new[c] == old[c])
    # the edit is stored once: a rerun records nothing more
    again = ingest(corpus, store, "en", settings, entities=False)
    assert again.docs_changed == 0 and store.scalar("SELECT count(*) FROM chunk_changes") == len(changes)


def test_near_duplicates_are_recorded_not_dropped(store, tmp_path):
    docs = _docs("en")
    ingest(_write(tmp_path / "a.jsonl", docs), store, "en", entities=False)
    copy = dict(docs[2], id="en_copy_of_avi", title="AVI (copy)")
    copy["text"] = copy["text"].replace("iron and steel company", "iron and steel firm")
    summary = ingest(_write(tmp_path / "b.jsonl", [copy]), store, "en", entities=False)
    assert summary.near_dup_docs == 1 and summary.near_dup_chunks >= 1
    rows = {(r["kind"], r["item_id"]): r for r in store.query("SELECT * FROM near_duplicates")}
    assert rows[("document", "en_copy_of_avi")]["duplicate_of"] == docs[2]["id"]
    assert rows[("chunk", "en_copy_of_avi_0")]["duplicate_of"] == f"{docs[2]['id']}_0"
    assert rows[("document", "en_copy_of_avi")]["jaccard"] >= 0.85
    assert store.scalar("SELECT count(*) FROM documents WHERE doc_id = 'en_copy_of_avi'") == 1  # kept
    # once rewritten, it is a duplicate no more: the record is cleared, not left stale
    copy["text"] = "An entirely different text about a fictional pottery in Dunmere, founded in 1931 by the Pretch family."
    ingest(_write(tmp_path / "b.jsonl", [copy]), store, "en", entities=False)
    row = store.query("SELECT duplicate_of FROM near_duplicates WHERE kind = 'document' AND item_id = 'en_copy_of_avi'")
    assert row == [{"duplicate_of": None}]


def test_bad_records_are_skipped_counted_and_recorded(store, tmp_path):
    docs = _docs("ru")[:3]
    path = tmp_path / "bad.jsonl"
    with open(path, "wb") as handle:
        handle.write(json.dumps(docs[0], ensure_ascii=False).encode() + b"\n")
        handle.write(b'{"id": "broken", "text": \n')
        handle.write(b'{"id": "latin1", "text": "\xe9t\xe9"}\n')
        handle.write(json.dumps(docs[1], ensure_ascii=False).encode() + b"\n")
        handle.write(json.dumps(docs[0], ensure_ascii=False).encode() + b"\n")
        handle.write(b'{"id": "no_text"}\n')
        handle.write(json.dumps(docs[2], ensure_ascii=False).encode() + b"\n")
    summary = ingest(path, store, "ru", entities=False)
    assert summary.docs_read == 3
    assert summary.skipped == {"malformed_json": 1, "bad_encoding": 1, "duplicate_id": 1, "missing_text": 1}
    assert summary.first_problems[0].startswith(f"{path}:2: ")
    errors = store.query("SELECT source, line, doc_id, error FROM ingest_errors ORDER BY line")
    assert [(e["line"], e["error"].split(":")[0]) for e in errors] == [
        (2, "malformed_json"), (3, "bad_encoding"), (5, "duplicate_id"), (6, "missing_text")
    ]
    assert all(e["source"] == str(path) for e in errors) and errors[2]["doc_id"] == docs[0]["id"]
    ingest(path, store, "ru", entities=False)
    assert store.scalar("SELECT count(*) FROM ingest_errors") == 4  # rerun: same errors, not new ones
    with pytest.raises(CorpusError, match=rf"{path}:2: "):
        ingest(path, store, "ru", load_settings(**{"ingest.strict": True}), entities=False)


def test_corpus_without_documents_fails_clearly(store, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(CorpusError, match="no usable documents.*empty file"):
        ingest(empty, store, "en", entities=False)
    assert store.scalar("SELECT count(*) FROM ingest_errors") == 1
    with pytest.raises(CorpusError, match="no such file"):
        ingest(tmp_path / "missing.jsonl", store, "en", entities=False)


@pytest.mark.slow
@pytest.mark.parametrize("name, lang", [("en-wiki-vital", "en"), ("ru-wikinews", "ru")])
def test_shared_corpus_subset(store, tmp_path, shared_corpora, name, lang):
    subset = tmp_path / "subset.jsonl"
    with open(shared_corpora / name / "docs.jsonl", encoding="utf-8") as source, open(subset, "w", encoding="utf-8") as out:
        for i, line in enumerate(source):
            if i == 500:
                break
            out.write(line)
    summary = ingest(subset, store, lang, entities=False)
    assert summary.docs_new == 500 and summary.skipped == {}
    assert store.scalar("SELECT count(DISTINCT doc_id) FROM chunks") == 500
    assert store.scalar("SELECT max(n_tokens) FROM chunks") <= 200
    meta = json.loads(store.query("SELECT meta FROM documents LIMIT 1")[0]["meta"])
    if lang == "en":
        assert set(meta) == {"topic", "description"}
    rerun = ingest(subset, store, lang, entities=False)
    assert rerun.docs_unchanged == 500 and rerun.chunks_written == 0
