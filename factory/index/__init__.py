"""Fixed search indices: BM25 (bm25s, rank-bm25 as reference), dense, hybrid.

Most callers need only::

    from factory.index import build_index, build_index_from_chunks, open_index
    index = open_index(folder, store=store)          # or corpus_path=BEIR corpus.jsonl
    hits = index.searcher("hybrid").search("query", k=10)
"""

from factory.index.base import SearchIndexError, Searcher
from factory.index.fixed import FixedIndex, Manifest, build_index, build_index_from_chunks, open_index, read_manifest

__all__ = [
    "FixedIndex",
    "Manifest",
    "SearchIndexError",
    "Searcher",
    "build_index",
    "build_index_from_chunks",
    "open_index",
    "read_manifest",
]
