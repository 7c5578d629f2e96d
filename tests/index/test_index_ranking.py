"""Ranking rules every searcher shares: order, ties, snippets, the protocol."""

from __future__ import annotations

import numpy as np
import pytest

from factory.index import Searcher, build_index_from_chunks, open_index
from factory.index.base import snippet, top_k
from factory.index.hybrid import rrf_scores


def test_top_k_orders_by_score_then_row():
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9, 0.5])
    assert top_k(scores, 4).tolist() == [1, 4, 0, 2]


def test_top_k_ties_straddling_the_cut_keep_the_smallest_rows():
    scores = np.array([1.0, 2.0, 1.0, 1.0, 1.0])
    # one slot left after row 1, four rows tie for it: row 0 wins, every time
    for _ in range(5):
        assert top_k(scores, 2).tolist() == [1, 0]


def test_top_k_min_score_and_short_arrays():
    scores = np.array([0.0, 3.0, 0.0, 1.0])
    assert top_k(scores, 10, min_score=0.0).tolist() == [1, 3]
    assert top_k(scores, 10).tolist() == [1, 3, 0, 2]
    assert top_k(np.zeros(0), 3).tolist() == []
    assert top_k(scores, 0).tolist() == []


@pytest.mark.parametrize("seed", range(5))
def test_top_k_agrees_with_a_full_sort_on_sparse_tied_scores(seed):
    rng = np.random.default_rng(seed)
    scores = np.zeros(3000, dtype=np.float32)
    hit = rng.choice(3000, 200, replace=False)
    scores[hit] = rng.integers(1, 6, size=200).astype(np.float32)  # few values: many ties
    want = [i for i in sorted(range(3000), key=lambda i: (-scores[i], i)) if scores[i] > 0]
    for k in (1, 10, 57, 200, 500):
        assert top_k(scores, k, min_score=0.0).tolist() == want[:k]
    assert top_k(scores, 10).tolist() == sorted(range(3000), key=lambda i: (-scores[i], i))[:10]


def test_snippet_caps_whitespace_tokens_and_keeps_spacing():
    text = "Alpha  beta\ngamma delta epsilon"
    assert snippet(text, 3) == "Alpha  beta\ngamma"
    assert snippet(text, 50) == text
    assert snippet("  short  ", 5) == "short"
    assert snippet(text, 0) == ""


def test_rrf_scores_sum_reciprocal_ranks():
    fused = rrf_scores([np.array([2, 0]), np.array([0, 1])], 3, 60)
    assert fused[0] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 62)
    assert fused[2] == pytest.approx(1 / 61)


@pytest.fixture()
def twin_index(tmp_path):
    # identical texts score identically: the order must come from the chunk ids
    chunks = [
        ("doc_c_0", "Harbour", "The lighthouse keeper rowed to the harbour at dawn.", None),
        ("doc_a_0", "Harbour", "The lighthouse keeper rowed to the harbour at dawn.", None),
        ("doc_b_0", "Harbour", "The lighthouse keeper rowed to the harbour at dawn.", None),
        ("doc_d_0", "Orchard", "Apples ripen late in the northern orchards.", None),
    ]
    build_index_from_chunks(chunks, tmp_path / "idx", "en", dense="hashing", progress=False)
    return open_index(tmp_path / "idx")


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_searchers_follow_the_protocol_and_break_ties_by_chunk_id(twin_index, kind):
    searcher = twin_index.searcher(kind)
    assert isinstance(searcher, Searcher)
    hits = searcher.search("lighthouse keeper harbour", k=3)
    assert [h.chunk_id for h in hits] == ["doc_a_0", "doc_b_0", "doc_c_0"]
    assert [h.rank for h in hits] == [1, 2, 3]
    if kind == "hybrid":  # fusion ranks the tied rows 1, 2, 3, so their fused scores step down
        assert hits[0].score > hits[1].score > hits[2].score
    else:
        assert hits[0].score == hits[1].score == hits[2].score
    assert searcher.search_many(["lighthouse keeper harbour", "apples"], k=3)[0] == hits


def test_bm25_returns_only_matching_chunks_and_nothing_for_unknown_words(twin_index):
    bm25 = twin_index.searcher("bm25")
    assert [h.chunk_id for h in bm25.search("apples", k=10)] == ["doc_d_0"]
    assert bm25.search("zyzzyva qwertyuiop", k=10) == []
    assert bm25.search("the and of", k=10) == []  # stop words only


def test_snippets_are_capped_by_settings(tmp_path):
    from factory.settings import IndexSettings

    words = " ".join(f"word{i}" for i in range(40))
    build_index_from_chunks([("c_0", "Title", words, None)], tmp_path / "idx", "en", dense=None, progress=False)
    index = open_index(tmp_path / "idx", settings=IndexSettings(snippet_tokens=5))
    hit = index.searcher("bm25").search("word3", k=1)[0]
    assert hit.snippet == "Title\nword0 word1 word2 word3"
    assert index.text("c_0") == words
    assert index.title("c_0") == "Title"
    default = open_index(tmp_path / "idx").searcher("bm25").search("word3", k=1)[0]
    assert default.snippet == "Title\n" + words


def test_scores_descend_on_a_real_query(tmp_path, en_rows):
    build_index_from_chunks(en_rows, tmp_path / "idx", "en", dense="hashing", progress=False)
    index = open_index(tmp_path / "idx")
    for kind in ("bm25", "dense", "hybrid"):
        hits = index.searcher(kind).search("ironworks on the river Ashkel flood", k=10)
        assert len(hits) == 10
        keys = [(-h.score, h.chunk_id) for h in hits]
        assert keys == sorted(keys)
