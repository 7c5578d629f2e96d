"""Hybrid search: reciprocal rank fusion of BM25 and dense rankings.

score(chunk) = sum over rankings of 1 / (rrf_k + rank); each ranking contributes
its top ``depth`` rows. Ties (frequent: a chunk ranked 3rd by one list and another
ranked 3rd by the other score the same) fall to the smaller chunk id.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from factory.index.base import hits_from_rows, top_k
from factory.index.bm25 import BM25Searcher
from factory.index.dense import DenseSearcher
from factory.records import Hit


def rrf_scores(rankings: Sequence[np.ndarray], n_rows: int, rrf_k: int) -> np.ndarray:
    """Fused scores for all rows (0 for rows no ranking returned)."""
    fused = np.zeros(n_rows, dtype=np.float64)
    for rows in rankings:
        fused[rows] += 1.0 / (rrf_k + np.arange(1, len(rows) + 1, dtype=np.float64))
    return fused


class HybridSearcher:
    name = "hybrid"

    def __init__(self, bm25: BM25Searcher, dense: DenseSearcher, *, rrf_k: int = 60, depth: int = 100) -> None:
        self.bm25 = bm25
        self.dense = dense
        self.rrf_k = rrf_k
        self.depth = depth
        self.chunk_ids = bm25.chunk_ids
        self.texts = bm25.texts
        self.snippet_tokens = bm25.snippet_tokens

    def load(self) -> "HybridSearcher":
        self.dense.load()
        return self

    def _fuse(self, bm25_rows: np.ndarray, dense_rows: np.ndarray, k: int) -> list[Hit]:
        fused = rrf_scores([bm25_rows, dense_rows], len(self.chunk_ids), self.rrf_k)
        rows = top_k(fused, k, min_score=0.0)
        return hits_from_rows(rows, fused, self.chunk_ids, self.texts, self.snippet_tokens)

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        if not queries:
            return []
        depth = max(self.depth, k)
        dense_ranked = self.dense.rows_for_vectors(self.dense.encoder.encode_queries(list(queries)), depth)
        out = []
        for query, (dense_rows, _) in zip(queries, dense_ranked):
            bm25_rows, _ = self.bm25.rows(query, depth)
            out.append(self._fuse(bm25_rows, dense_rows, k))
        return out
