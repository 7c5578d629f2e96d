"""Dense vectors on disk and exact inner-product search over them.

Vectors are float32, L2-normalised, one row per passage in chunk-id order, saved
as a ``.npy`` file and memory-mapped on load; a query is one matrix-vector product
and a partial sort (``top_k``), exact and deterministic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from factory.index.base import SearchIndexError, hits_from_rows, top_k
from factory.index.encoders import Encoder
from factory.records import Hit


def encode_to_file(
    encoder: Encoder, texts: Sequence[str], path: Path, *, batch_size: int = 32, progress: bool = True
) -> np.ndarray:
    """Encode passages in fixed batches (row order), writing straight into a memory-mapped .npy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(len(texts), encoder.dim))
    columns = (
        TextColumn("[bold]encoding[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, disable=not progress, transient=False) as bar:
        task = bar.add_task(encoder.name, total=len(texts))
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            vectors = encoder.encode_passages(batch)
            if vectors.shape != (len(batch), encoder.dim):
                raise SearchIndexError(f"{encoder.name} returned shape {vectors.shape} for {len(batch)} passages")
            out[start : start + len(batch)] = vectors
            bar.advance(task, len(batch))
    out.flush()
    del out
    return load_vectors(path)


def load_vectors(path: Path) -> np.ndarray:
    if not path.is_file():
        raise SearchIndexError(f"{path}: dense vectors missing")
    vectors = np.load(path, mmap_mode="r")
    if vectors.dtype != np.float32 or vectors.ndim != 2:
        raise SearchIndexError(f"{path}: expected a 2-d float32 array, found {vectors.dtype} {vectors.shape}")
    return vectors


class DenseSearcher:
    name = "dense"

    def __init__(
        self,
        encoder: Encoder | Callable[[], Encoder],
        vectors: np.ndarray,
        chunk_ids: Sequence[str],
        texts: Sequence[str] | None = None,
        snippet_tokens: int = 512,
    ) -> None:
        if vectors.shape[0] != len(chunk_ids):
            raise SearchIndexError(f"dense index has {vectors.shape[0]} rows but {len(chunk_ids)} chunk ids were given")
        self._encoder = encoder
        self.vectors = vectors
        self.chunk_ids = chunk_ids
        self.texts = texts
        self.snippet_tokens = snippet_tokens

    @property
    def encoder(self) -> Encoder:
        # a loader defers reading the model until the first dense query
        if callable(self._encoder) and not hasattr(self._encoder, "encode_queries"):
            self._encoder = self._encoder()
        return self._encoder  # type: ignore[return-value]

    def load(self) -> "DenseSearcher":
        """Load the query encoder now (it is otherwise loaded by the first search)."""
        _ = self.encoder
        return self

    def rows_for_vectors(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for query in queries:
            # one matrix-vector product per query: a batched product takes another BLAS
            # path whose last bits differ, and a query must score the same alone or batched
            scores = np.asarray(self.vectors @ query, dtype=np.float32)
            out.append((top_k(scores, k), scores))
        return out

    def rows(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.rows_for_vectors(self.encoder.encode_queries([query]), k)[0]

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        if not queries:
            return []
        ranked = self.rows_for_vectors(self.encoder.encode_queries(list(queries)), k)
        return [hits_from_rows(rows, scores, self.chunk_ids, self.texts, self.snippet_tokens) for rows, scores in ranked]
