"""Near-duplicate accepted tasks within a run: MinHash on the questions, identical support sets.

The check and the registration happen under one lock, so two candidates finishing at
the same moment cannot both be accepted as each other's duplicate.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable

from datasketch import MinHash

from factory.validate.matching import answer_keys


@dataclass(frozen=True)
class Duplicate:
    kind: str  # near_duplicate_question | same_support
    of: str    # the task it duplicates
    jaccard: float = 1.0


def _shingles(question: str, lang: str) -> set[str]:
    keys = answer_keys(question, lang)
    grams = {" ".join(keys[i : i + 2]) for i in range(max(1, len(keys) - 1))}
    return grams | set(keys)


class TaskDeduper:
    def __init__(self, threshold: float = 0.7, num_perm: int = 128) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self._hashes: dict[str, MinHash] = {}
        self._supports: dict[frozenset[str], str] = {}
        self._lock = threading.Lock()

    def _minhash(self, question: str, lang: str) -> MinHash:
        mh = MinHash(num_perm=self.num_perm, seed=1)
        for shingle in _shingles(question, lang):
            mh.update(shingle.encode("utf-8"))
        return mh

    def _find(self, task_id: str, question: str, support: Iterable[str], lang: str) -> tuple[Duplicate | None, MinHash]:
        key = frozenset(support)
        if key in self._supports and self._supports[key] != task_id:
            return Duplicate("same_support", self._supports[key]), self._minhash(question, lang)
        mh = self._minhash(question, lang)
        best: Duplicate | None = None
        # a linear scan: a run accepts thousands of tasks at most, and LSH misses pairs near the threshold
        for other, their in self._hashes.items():
            if other == task_id:
                continue
            jaccard = mh.jaccard(their)
            if jaccard >= self.threshold and (best is None or jaccard > best.jaccard):
                best = Duplicate("near_duplicate_question", other, round(jaccard, 3))
        return best, mh

    def check_and_add(self, task_id: str, question: str, support: Iterable[str], lang: str) -> Duplicate | None:
        """The duplicate found, or None after registering this task as accepted."""
        support = list(support)
        with self._lock:
            if task_id in self._hashes:
                return None  # already registered (a resumed run re-seeing its own task)
            found, mh = self._find(task_id, question, support, lang)
            if found is None:
                self._add(task_id, mh, support)
            return found

    def add(self, task_id: str, question: str, support: Iterable[str], lang: str) -> None:
        with self._lock:
            if task_id not in self._hashes:
                self._add(task_id, self._minhash(question, lang), list(support))

    def _add(self, task_id: str, mh: MinHash, support: list[str]) -> None:
        self._hashes[task_id] = mh
        self._supports.setdefault(frozenset(support), task_id)

    def supports(self) -> set[frozenset[str]]:
        with self._lock:
            return set(self._supports)
