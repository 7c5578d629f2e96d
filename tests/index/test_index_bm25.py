"""BM25: analysis per language, bm25s checked against rank-bm25, Russian inflection."""

from __future__ import annotations

import re

import pytest

from factory.index import build_index, build_index_from_chunks, open_index
from factory.index.analysis import Analyzer
from factory.index.bm25 import BM25Searcher, Bm25sScorer, RankBm25Scorer
from factory.index.fixed import index_text


def test_russian_case_forms_share_a_term():
    analyze = Analyzer("ru")
    forms = ["Заречинск", "Заречинска", "Заречинске", "Заречинском"]
    assert len({tuple(analyze(f)) for f in forms}) == 1
    assert analyze("Пётр") == analyze("Петра") == analyze("петром")  # ё folded, case endings stripped


def test_stop_words_dropped_per_language_and_english_stemmed():
    assert Analyzer("ru")("и в на что это") == []
    assert Analyzer("en")("the of and is it") == []
    en = Analyzer("en")
    assert en("Ironworks") == en("ironwork")
    assert en("floods flooding") == [en("flood")[0]] * 2
    # a Latin word inside a Russian text is stemmed as English
    assert Analyzer("ru")("компания Floods") == Analyzer("ru")("компании flood")


def _queries(rows):
    """Article titles and words from the texts: many shapes of query."""
    titles = sorted({r["title"] for r in rows})
    words = [" ".join(re.findall(r"\w+", r["text"])[3:9]) for r in rows[::3]]
    return titles + words


@pytest.mark.parametrize("method", ["lucene", "okapi"])
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_bm25s_matches_rank_bm25_top10_ids_and_scores(lang, method, ru_rows, en_rows):
    rows = sorted(ru_rows if lang == "ru" else en_rows, key=lambda r: r["chunk_id"])
    analyzer = Analyzer(lang)
    tokens = analyzer.many([index_text(r["title"], r["text"]) for r in rows])
    ids = [r["chunk_id"] for r in rows]
    fast = BM25Searcher(Bm25sScorer.build(tokens, method, 1.2, 0.75), analyzer, ids)
    reference = BM25Searcher(RankBm25Scorer(tokens, method, 1.2, 0.75), analyzer, ids)
    compared = 0
    for query in _queries(rows):
        got, want = fast.search(query, 10), reference.search(query, 10)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in want], query
        assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-5, abs=1e-6), query
        compared += bool(got)
    assert compared >= 20


def test_backends_selectable_on_a_fixed_index(tmp_path, ru_rows):
    build_index_from_chunks(ru_rows, tmp_path / "idx", "ru", dense=None, progress=False)
    index = open_index(tmp_path / "idx")
    query = "стекольный завод основал купец"
    fast = index.searcher("bm25", backend="bm25s").search(query, 10)
    slow = index.searcher("bm25", backend="rank-bm25").search(query, 10)
    assert [h.chunk_id for h in fast] == [h.chunk_id for h in slow]
    assert fast[0].score == pytest.approx(slow[0].score, rel=1e-5)


def test_inflected_russian_query_finds_the_other_form(tmp_path):
    chunks = [
        ("c1", "", "Заречинск — уездный город на реке Соломе.", None),
        ("c2", "", "Ольшанск стоит ниже по течению.", None),
        ("c3", "", "Ключевск известен ярмаркой льна.", None),
    ]
    build_index_from_chunks(chunks, tmp_path / "idx", "ru", dense=None, progress=False)
    hits = open_index(tmp_path / "idx").searcher("bm25").search("в Заречинске", 10)
    assert [h.chunk_id for h in hits] == ["c1"]
    assert "Заречинск " in hits[0].snippet and "Заречинске" not in hits[0].snippet


def test_inflected_query_on_the_fixture_corpus(store, ru_rows):
    store.append("chunks", ru_rows)
    build_index(store, store.root.parent / "idx", "ru", dense=None, progress=False)
    hits = open_index(store.root.parent / "idx", store=store).searcher("bm25").search("Заречинске", 40)
    found = {h.chunk_id for h in hits}
    forms = {r["chunk_id"]: set(re.findall(r"Заречинск\w*", r["title"] + " " + r["text"])) for r in ru_rows}
    with_stem = {cid for cid, f in forms.items() if f}
    without_query_form = {cid for cid, f in forms.items() if f and "Заречинске" not in f}
    assert without_query_form, "the fixture should hold chunks with other forms only"
    assert with_stem == found  # every chunk with any form, and only those
    assert without_query_form <= found  # including those that never write «Заречинске»


def test_empty_corpus_is_an_error(tmp_path):
    from factory.index import SearchIndexError

    with pytest.raises(SearchIndexError, match="no chunks"):
        build_index_from_chunks([], tmp_path / "idx", "en", dense=None, progress=False)
