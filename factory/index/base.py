"""The one Searcher protocol that BM25, dense and hybrid search implement.

Also the two helpers every searcher shares, so that all of them rank the same way:
``top_k`` (score descending, ties by row, and rows are kept in chunk-id order, so
ties fall to the smaller chunk id) and ``snippet`` (a whitespace-token cap).
"""

from __future__ import annotations

import re
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from factory.errors import FactoryError
from factory.records import Hit


class SearchIndexError(FactoryError):
    """A missing, damaged or mismatched index, or a search it cannot answer."""


@runtime_checkable
class Searcher(Protocol):
    name: str

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top-k hits, score descending, ties broken by chunk id ascending."""
        ...

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]: ...


_TOKEN = re.compile(r"\S+")


def snippet(text: str, max_tokens: int) -> str:
    """The text cut after ``max_tokens`` whitespace tokens, original spacing kept."""
    if max_tokens <= 0:
        return ""
    end = None
    for i, match in enumerate(_TOKEN.finditer(text)):
        if i == max_tokens:
            break
        end = match.end()
    else:
        return text.strip()
    return text[: end or 0].strip()


def top_k(scores: np.ndarray, k: int, *, min_score: float | None = None) -> np.ndarray:
    """Row indices of the k best scores, score descending, ties by row ascending.

    Deterministic even when ties straddle the cut: every row scoring at least the
    k-th best value is a candidate, and the candidates are fully ordered.
    ``min_score``: rows scoring at or below it are left out (BM25 non-matches). They
    are dropped before the partial sort, which is much faster for sparse scores:
    a partition over a million mostly-zero scores is slow (all those ties).
    """
    if k <= 0 or scores.shape[0] == 0:
        return np.empty(0, dtype=np.int64)
    if min_score is not None:
        rows = np.flatnonzero(scores > min_score)
        values = scores[rows]
    else:
        rows = None
        values = scores
    n = values.shape[0]
    if k < n:
        kth = np.partition(values, n - k)[n - k]
        candidates = np.flatnonzero(values >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -values[candidates]))[:k]
    picked = candidates[order]
    return picked if rows is None else rows[picked]


def hits_from_rows(
    rows: np.ndarray, scores: np.ndarray, chunk_ids: Sequence[str], texts: Sequence[str] | None, snippet_tokens: int
) -> list[Hit]:
    return [
        Hit(
            chunk_id=chunk_ids[int(row)],
            score=float(scores[int(row)]),
            rank=rank,
            snippet=snippet(texts[int(row)], snippet_tokens) if texts is not None else "",
        )
        for rank, row in enumerate(rows, start=1)
    ]
