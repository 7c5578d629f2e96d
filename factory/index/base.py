"""The one Searcher protocol that BM25, dense and hybrid search implement."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from factory.records import Hit


@runtime_checkable
class Searcher(Protocol):
    name: str

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top-k hits, score descending, ties broken by chunk id ascending."""
        ...

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]: ...
