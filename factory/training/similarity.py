"""When two tasks are "the same" for training: one support set, or near-duplicate questions.

Questions are sketched with datasketch MinHash over their normalised word keys and
key bigrams (stems in English, lemmas in Russian, numbers as digits: the keys answer
matching uses), and paired through MinHash LSH; a pair counts when the estimated
Jaccard similarity is at least the threshold. Support sets count as shared when they
hold the same chunk ids, in any order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from datasketch import MinHash, MinHashLSH

from factory.validate.matching import answer_keys

SEED = 1  # one permutation family for every sketch, across runs


def support_key(chunk_ids: Iterable[str]) -> str:
    return "\x1f".join(sorted(set(chunk_ids)))


def question_shingles(question: str, lang: str) -> set[str]:
    keys = answer_keys(question, lang)
    return set(keys) | {f"{a} {b}" for a, b in zip(keys, keys[1:])}


@dataclass(frozen=True)
class Match:
    key: str
    kind: str  # same_support | near_duplicate
    jaccard: float = 1.0


class SimilarityIndex:
    """Items (tasks) of one language: look up which of them a question or support set hits."""

    def __init__(self, lang: str, threshold: float = 0.7, num_perm: int = 128) -> None:
        self.lang = lang
        self.threshold = threshold
        self.num_perm = num_perm
        self._lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self._sketches: dict[str, MinHash] = {}
        self._supports: dict[str, list[str]] = {}

    def sketch(self, question: str) -> MinHash:
        mh = MinHash(num_perm=self.num_perm, seed=SEED)
        for shingle in sorted(question_shingles(question, self.lang)):
            mh.update(shingle.encode("utf-8"))
        return mh

    def __contains__(self, key: object) -> bool:
        return key in self._sketches

    def add(self, key: str, question: str, support: Iterable[str], sketch: MinHash | None = None) -> MinHash:
        if key in self._sketches:
            return self._sketches[key]
        mh = sketch if sketch is not None else self.sketch(question)
        self._sketches[key] = mh
        self._lsh.insert(key, mh)
        support = list(support)
        if support:
            self._supports.setdefault(support_key(support), []).append(key)
        return mh

    def matches(self, question: str, support: Iterable[str], *, skip: str | None = None,
                sketch: MinHash | None = None) -> list[Match]:
        """Every stored item sharing the support set or near-duplicating the question (``skip`` left out)."""
        found: dict[str, Match] = {}
        support = list(support)
        if support:
            for other in self._supports.get(support_key(support), []):
                if other != skip:
                    found.setdefault(other, Match(other, "same_support"))
        mh = sketch if sketch is not None else self.sketch(question)
        for other in self._lsh.query(mh):
            if other in found or other == skip:
                continue
            jaccard = mh.jaccard(self._sketches[other])
            if jaccard >= self.threshold:
                found[other] = Match(other, "near_duplicate", round(float(jaccard), 3))
        return sorted(found.values(), key=lambda m: (m.kind != "same_support", -m.jaccard, m.key))
