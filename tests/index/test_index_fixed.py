"""The on-disk index: manifest, verification against its corpus, clear errors, determinism."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.index import SearchIndexError, build_index, build_index_from_chunks, open_index, read_manifest


def _beir(rows, path):
    with open(path, "w", encoding="utf-8") as handle:
        for r in rows:
            handle.write(json.dumps({"_id": r["chunk_id"], "title": r["title"], "text": r["text"]}, ensure_ascii=False) + "\n")
    return path


def test_build_from_store_filters_language_and_records_the_manifest(bilingual_store, ru_rows, tmp_path):
    manifest = build_index(bilingual_store, tmp_path / "ru", "ru", dense="hashing", progress=False)
    assert manifest.lang == "ru" and manifest.chunk_count == len(ru_rows)
    assert manifest.dense is not None and manifest.dense.model == "hashing" and manifest.dense.dim == 384
    assert manifest.analyzer["stemmers"]["cyrillic"] == "snowball russian"
    assert manifest.bm25["method"] == "lucene" and manifest.libraries["bm25s"]
    assert "title" in manifest.index_text
    index = open_index(tmp_path / "ru", store=bilingual_store)
    assert index.lang == "ru"
    assert index.chunk_ids == sorted(r["chunk_id"] for r in ru_rows)
    row = ru_rows[0]
    assert index.text(row["chunk_id"]) == row["text"] and row["chunk_id"] in index
    assert json.loads((tmp_path / "ru" / "chunk_ids.json").read_text()) == index.chunk_ids


def test_store_with_two_languages_needs_lang(bilingual_store, tmp_path):
    with pytest.raises(SearchIndexError, match="--lang"):
        build_index(bilingual_store, tmp_path / "idx", None, dense=None, progress=False)
    with pytest.raises(SearchIndexError, match="no chunks in language"):
        build_index(bilingual_store, tmp_path / "idx", "de", dense=None, progress=False)


def test_changed_added_and_removed_chunks_are_named(store, en_rows, tmp_path):
    store.append("chunks", en_rows)
    build_index(store, tmp_path / "idx", "en", dense=None, progress=False)
    open_index(tmp_path / "idx", store=store)  # matches
    changed = dict(en_rows[2], text=en_rows[2]["text"] + " Edited.", content_hash="edited")
    store.append("chunks", [changed])
    with pytest.raises(SearchIndexError) as err:
        open_index(tmp_path / "idx", store=store)
    message = str(err.value)
    assert "1 chunk(s) changed" in message and en_rows[2]["chunk_id"] in message and "rebuild" in message
    store.append("chunks", [dict(en_rows[0], chunk_id="zz_new_0", doc_id="zz_new")])
    with pytest.raises(SearchIndexError, match="in the corpus but not indexed .*zz_new_0"):
        open_index(tmp_path / "idx", store=store)


def test_corpus_file_checks(en_rows, tmp_path):
    build_index_from_chunks(en_rows, tmp_path / "idx", "en", dense=None, progress=False)
    corpus = _beir(en_rows, tmp_path / "corpus.jsonl")
    assert len(open_index(tmp_path / "idx", corpus_path=corpus)) == len(en_rows)
    fewer = _beir(en_rows[1:], tmp_path / "fewer.jsonl")
    with pytest.raises(SearchIndexError, match=f"indexed but not in the corpus .*{en_rows[0]['chunk_id']}"):
        open_index(tmp_path / "idx", corpus_path=fewer)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(corpus.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(SearchIndexError, match="broken.jsonl:2"):
        open_index(tmp_path / "idx", corpus_path=broken)


def test_missing_or_incomplete_index_errors(en_rows, tmp_path):
    with pytest.raises(SearchIndexError, match="no index here.*factory index build"):
        open_index(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SearchIndexError, match="manifest.json.*missing"):
        open_index(tmp_path / "empty")
    build_index_from_chunks(en_rows, tmp_path / "idx", "en", dense=None, progress=False)
    (tmp_path / "idx" / "bm25" / "vocab.index.json").unlink()
    with pytest.raises(SearchIndexError, match="vocab.index.json missing"):
        open_index(tmp_path / "idx")
    (tmp_path / "idx" / "manifest.json").write_text('{"lang": "en"}')
    with pytest.raises(SearchIndexError, match="not a valid index manifest"):
        read_manifest(tmp_path / "idx")


def test_dense_search_on_a_bm25_only_index_is_a_clear_error(en_rows, tmp_path):
    build_index_from_chunks(en_rows, tmp_path / "idx", "en", dense="none", progress=False)
    index = open_index(tmp_path / "idx")
    with pytest.raises(SearchIndexError, match="without dense vectors"):
        index.searcher("dense")


def test_changed_analyser_or_encoder_is_refused(en_rows, tmp_path):
    build_index_from_chunks(en_rows, tmp_path / "idx", "en", dense="hashing", progress=False)
    path = tmp_path / "idx" / "manifest.json"
    original = json.loads(path.read_text())
    edited = json.loads(path.read_text())
    edited["analyzer"]["stopwords"]["sha256"] = "0" * 64
    path.write_text(json.dumps(edited))
    with pytest.raises(SearchIndexError, match="different text analyser"):
        open_index(tmp_path / "idx")
    edited = dict(original, dense=dict(original["dense"], files_hash="f" * 64))
    path.write_text(json.dumps(edited))
    with pytest.raises(SearchIndexError, match="rebuild the index"):
        open_index(tmp_path / "idx").searcher("dense").search("river", 3)


def test_refuses_to_overwrite_a_folder_that_is_not_an_index(en_rows, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("keep me")
    with pytest.raises(SearchIndexError, match="not an index"):
        build_index_from_chunks(en_rows, tmp_path / "docs", "en", dense=None, progress=False)
    assert (tmp_path / "docs" / "notes.txt").read_text() == "keep me"


def test_rebuild_is_identical_whatever_the_input_order(en_rows, tmp_path):
    first = build_index_from_chunks(en_rows, tmp_path / "a", "en", dense="hashing", progress=False)
    shuffled = list(en_rows)
    random.Random(3).shuffle(shuffled)
    second = build_index_from_chunks(shuffled, tmp_path / "b", "en", dense="hashing", progress=False)
    assert first.files == second.files  # every file byte-identical (sha256)
    assert first.corpus_fingerprint == second.corpus_fingerprint
    a, b = open_index(tmp_path / "a"), open_index(tmp_path / "b")
    for query in ("river flood", "composer choir", "ironworks furnace"):
        for kind in ("bm25", "dense", "hybrid"):
            assert a.searcher(kind).search(query, 10) == b.searcher(kind).search(query, 10)
    # rebuilding in place replaces the index
    third = build_index_from_chunks(en_rows, tmp_path / "a", "en", dense="hashing", progress=False)
    assert third.files == first.files


def test_content_hash_defaults_to_the_text_hash(tmp_path):
    chunks = [("c_0", "some text here", None)]
    built = build_index_from_chunks(chunks, tmp_path / "idx", "en", dense=None, progress=False)
    explicit = [("c_0", "some text here", hashlib.sha256(b"some text here").hexdigest())]
    again = build_index_from_chunks(explicit, tmp_path / "idx2", "en", dense=None, progress=False)
    assert built.corpus_fingerprint == again.corpus_fingerprint


def test_cli_build_and_search(bilingual_store, tmp_path):
    runner = CliRunner()
    out = tmp_path / "ru"
    result = runner.invoke(
        app, ["index", "build", "--store", str(bilingual_store.root), "--out", str(out), "--lang", "ru", "--dense", "hashing"]
    )
    assert result.exit_code == 0, result.output
    assert "ru chunks" in " ".join(result.output.split())
    result = runner.invoke(
        app, ["search", "стекольного завода", "--index", str(out), "--k", "3", "--backend", "hybrid", "--json",
              "--store", str(bilingual_store.root)]
    )
    assert result.exit_code == 0, result.output
    hits = [json.loads(line) for line in result.output.splitlines()]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert hits[0]["chunk_id"].startswith("ru_zavod")
    result = runner.invoke(app, ["search", "завод", "--index", str(out), "--snippet-tokens", "4"])
    assert result.exit_code == 0 and "ru_zavod" in result.output
    result = runner.invoke(app, ["search", "x", "--index", str(tmp_path / "none")])
    assert result.exit_code != 0 and isinstance(result.exception, SearchIndexError)
