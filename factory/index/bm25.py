"""BM25 over analysed passages: bm25s (fast, saved to disk) and rank-bm25 (reference).

Both backends compute the same scores for each variant (``settings.index.bm25_method``),
so switching backend changes speed, never rankings. With K = k1 (1 - b + b |d| / avgdl):

* ``lucene`` (default): idf ``ln(1 + (N - df + .5) / (df + .5))``, never 0; term
  weight ``tf / (tf + K)``. bm25s ``method="lucene"``; for rank-bm25, ``BM25Okapi``
  with that idf, its score divided by ``k1 + 1`` (BM25Okapi multiplies by it).
* ``okapi``: exactly ``rank_bm25.BM25Okapi(epsilon=0)``: idf ``ln((N - df + .5) / (df + .5))``
  floored at 0, term weight ``tf (k1 + 1) / (tf + K)``; in bm25s ``method="atire"``
  (the weight with ``k1 + 1``) with ``idf_method="robertson"``. A term in half the
  chunks or more weighs nothing, which hurts small corpora: hence not the default.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

import bm25s
import numpy as np

from factory.index.analysis import Analyzer
from factory.index.base import SearchIndexError, hits_from_rows, top_k
from factory.records import Hit

# bm25s logs an info line for every empty query
logging.getLogger("bm25s").setLevel(logging.WARNING)

BM25S_VARIANTS = {"lucene": ("lucene", "lucene"), "okapi": ("atire", "robertson")}


def _vocab(token_lists: Sequence[Sequence[str]]) -> dict[str, int]:
    # sorted, so the saved index is identical whatever the hash seed of the process
    unique: set[str] = set()
    for tokens in token_lists:
        unique.update(tokens)
    return {token: i for i, token in enumerate(sorted(unique))}


class Bm25sScorer:
    """A bm25s index: scores every row for a list of query terms."""

    backend = "bm25s"

    def __init__(self, retriever: bm25s.BM25) -> None:
        self.retriever = retriever
        self.vocab: dict[str, int] = retriever.vocab_dict
        self.num_docs = int(retriever.scores["num_docs"])

    @classmethod
    def build(cls, token_lists: Sequence[Sequence[str]], method: str = "lucene", k1: float = 1.5, b: float = 0.75) -> "Bm25sScorer":
        if method not in BM25S_VARIANTS:
            raise SearchIndexError(f"unknown BM25 method {method!r}; known: {', '.join(BM25S_VARIANTS)}")
        if not token_lists:
            raise SearchIndexError("cannot build a BM25 index over zero passages")
        tf_method, idf_method = BM25S_VARIANTS[method]
        vocab = _vocab(token_lists)
        ids = [[vocab[t] for t in tokens] for tokens in token_lists]
        retriever = bm25s.BM25(k1=k1, b=b, method=tf_method, idf_method=idf_method)
        retriever.index((ids, vocab), show_progress=False)
        return cls(retriever)

    def save(self, folder: Path) -> None:
        self.retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, *, mmap: bool = True) -> "Bm25sScorer":
        if not (folder / "params.index.json").exists():
            raise SearchIndexError(f"{folder}: no bm25s index here (params.index.json missing)")
        return cls(bm25s.BM25.load(str(folder), mmap=mmap, show_progress=False))

    def scores(self, terms: Sequence[str]) -> np.ndarray | None:
        """Scores of all rows, or None when no query term is in the vocabulary."""
        ids = [self.vocab[t] for t in terms if t in self.vocab]
        if not ids:
            return None
        return self.retriever.get_scores_from_ids(ids)

    def doc_freq(self, term: str) -> int:
        """Rows holding ``term`` (the CSC matrix keeps one column per term)."""
        i = self.vocab.get(term)
        if i is None:
            return 0
        indptr = self.retriever.scores["indptr"]
        return int(indptr[i + 1] - indptr[i])


class RankBm25Scorer:
    """rank_bm25.BM25Okapi configured to score exactly like bm25s for the same variant."""

    backend = "rank-bm25"

    def __init__(self, token_lists: Sequence[Sequence[str]], method: str = "lucene", k1: float = 1.5, b: float = 0.75) -> None:
        if method not in BM25S_VARIANTS:
            raise SearchIndexError(f"unknown BM25 method {method!r}; known: {', '.join(BM25S_VARIANTS)}")
        if not token_lists:
            raise SearchIndexError("cannot build a BM25 index over zero passages")
        model_class = _okapi_with_lucene_idf() if method == "lucene" else _okapi()
        # rank_bm25 needs lists it can measure, not generators
        self.model = model_class([list(t) for t in token_lists], k1=k1, b=b, epsilon=0.0)
        self.scale = 1.0 / (k1 + 1.0) if method == "lucene" else 1.0
        self.num_docs = self.model.corpus_size
        self._df: dict[str, int] = {}
        for tokens in token_lists:
            for token in set(tokens):
                self._df[token] = self._df.get(token, 0) + 1

    def doc_freq(self, term: str) -> int:
        return self._df.get(term, 0)

    def scores(self, terms: Sequence[str]) -> np.ndarray | None:
        if not any(t in self.model.idf for t in terms):
            return None
        return np.asarray(self.model.get_scores(list(terms))) * self.scale


def _okapi():
    from rank_bm25 import BM25Okapi

    return BM25Okapi


def _okapi_with_lucene_idf():
    from rank_bm25 import BM25Okapi

    class LuceneIdfOkapi(BM25Okapi):
        def _calc_idf(self, nd):  # noqa: ANN001 - rank_bm25's signature
            n = self.corpus_size
            for word, df in nd.items():
                self.idf[word] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            self.average_idf = sum(self.idf.values()) / max(len(self.idf), 1)

    return LuceneIdfOkapi


Scorer = Bm25sScorer | RankBm25Scorer


class BM25Searcher:
    """Searcher over a BM25 scorer. Rows must be in chunk-id order (ties fall to the smaller id)."""

    name = "bm25"

    def __init__(
        self,
        scorer: Scorer,
        analyzer: Analyzer,
        chunk_ids: Sequence[str],
        texts: Sequence[str] | None = None,
        snippet_tokens: int = 512,
    ) -> None:
        if scorer.num_docs != len(chunk_ids):
            raise SearchIndexError(f"BM25 index has {scorer.num_docs} rows but {len(chunk_ids)} chunk ids were given")
        self.scorer = scorer
        self.analyzer = analyzer
        self.chunk_ids = chunk_ids
        self.texts = texts
        self.snippet_tokens = snippet_tokens

    def rows(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(row indices, all scores) of the top k; rows scoring 0 (no term matched) are left out."""
        scores = self.scorer.scores(self.analyzer(query))
        if scores is None:
            return np.empty(0, dtype=np.int64), np.zeros(0)
        return top_k(scores, k, min_score=0.0), scores

    def doc_freq(self, word: str) -> int:
        """Passages holding ``word`` as the index analyses it (0 for a stop word or unseen word;
        the largest count when the analyser splits it)."""
        return max((self.scorer.doc_freq(t) for t in self.analyzer(word)), default=0)

    def search(self, query: str, k: int = 10) -> list[Hit]:
        rows, scores = self.rows(query, k)
        return hits_from_rows(rows, scores, self.chunk_ids, self.texts, self.snippet_tokens)

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]
