"""Near-duplicate chunks and documents with datasketch MinHash LSH.

Each chunk is sketched over its word 3-shingles (lower-cased); a document's sketch is
the element-wise minimum of its chunks' sketches, which is exactly the sketch of the
union of their shingle sets. Items are inserted in order (stored items first, then
the new ones in reading order); a new item that the LSH index pairs with an earlier
one, and whose estimated Jaccard similarity is at least the threshold, is reported as
a duplicate of the most similar earlier item. Nothing is dropped: duplicates stay in
the corpus and are recorded in ``near_duplicates``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
from datasketch import MinHash, MinHashLSH

SHINGLE_WORDS = 3
SCHEME = "affine32"
_TOKEN = re.compile(r"\w+", re.UNICODE)


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[bytes]:
    words = _TOKEN.findall(text.lower())
    if len(words) <= size:
        return {" ".join(words).encode("utf-8")} if words else set()
    return {" ".join(words[i : i + size]).encode("utf-8") for i in range(len(words) - size + 1)}


@dataclass
class NearDuplicate:
    kind: str  # chunk | document
    item_id: str
    duplicate_of: str
    jaccard: float


class Sketcher:
    """MinHash sketches that share one set of permutations (built once: it is costly)."""

    def __init__(self, num_perm: int = 64, seed: int = 1) -> None:
        self.num_perm = num_perm
        self._template = MinHash(num_perm=num_perm, seed=seed, scheme=SCHEME, hashfunc=zlib.crc32)

    def empty(self) -> np.ndarray:
        return self._template.hashvalues.copy()

    def sketch(self, text: str) -> np.ndarray:
        m = MinHash(
            num_perm=self.num_perm,
            permutations=self._template.permutations,
            scheme=SCHEME,
            hashfunc=zlib.crc32,  # deterministic across runs and fast; datasketch mixes it (murmur finaliser)
        )
        m.update_batch(shingles(text))
        return m.hashvalues

    def minhash(self, values: np.ndarray) -> MinHash:
        return MinHash(hashvalues=values, permutations=self._template.permutations, scheme=SCHEME, hashfunc=zlib.crc32)


@dataclass
class DedupIndex:
    """LSH over items of one kind; ``add`` returns the near-duplicate found, if any."""

    sketcher: Sketcher
    threshold: float
    kind: str
    _lsh: MinHashLSH = field(init=False)
    _values: dict[str, np.ndarray] = field(default_factory=dict, init=False)
    _order: dict[str, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._lsh = MinHashLSH(threshold=self.threshold, num_perm=self.sketcher.num_perm)

    def __len__(self) -> int:
        return len(self._values)

    def add(self, item_id: str, values: np.ndarray, *, check: bool = True) -> NearDuplicate | None:
        if item_id in self._values:  # a second occurrence of an id (should not happen: ids are unique)
            return None
        empty = bool(np.all(values == self.sketcher.empty()))
        found = None
        minhash = self.sketcher.minhash(values)
        if check and not empty:
            best: tuple[float, int, str] | None = None
            for other in self._lsh.query(minhash):
                similarity = float(np.mean(self._values[other] == values))
                if similarity >= self.threshold:
                    candidate = (-similarity, self._order[other], other)
                    if best is None or candidate < best:
                        best = candidate
            if best is not None:
                found = NearDuplicate(self.kind, item_id, best[2], round(-best[0], 4))
        if not empty:
            self._lsh.insert(item_id, minhash, check_duplication=False)
        self._values[item_id] = values
        self._order[item_id] = len(self._order)
        return found


def document_sketch(chunk_sketches: Iterable[np.ndarray], sketcher: Sketcher) -> np.ndarray:
    values = sketcher.empty()
    for sketch in chunk_sketches:
        values = np.minimum(values, sketch)
    return values


def find_near_duplicates(
    items: Iterable[tuple[str, str]], *, threshold: float = 0.85, num_perm: int = 64, kind: str = "chunk"
) -> list[NearDuplicate]:
    """Near-duplicates among ``(item_id, text)`` pairs, in order (for small jobs and tests)."""
    sketcher = Sketcher(num_perm)
    index = DedupIndex(sketcher, threshold, kind)
    out = []
    for item_id, text in items:
        found = index.add(item_id, sketcher.sketch(text))
        if found:
            out.append(found)
    return out
