"""When two tasks are "the same": one support set, or near-duplicate questions.

Questions are sketched with datasketch MinHash over their normalised word keys and
key bigrams (stems in English, lemmas in Russian, numbers as digits: the keys answer
matching uses); a pair counts when the estimated Jaccard similarity is at least the
threshold. Support sets count as shared when they hold the same chunk ids, in any
order. Two users, one sketch:

* ``TaskDeduper``: the generation loop's check of a passed candidate against the tasks
  accepted before it (a linear scan: a run accepts thousands of tasks at most, and LSH
  misses pairs near the threshold), with check and registration under one lock; and a
  candidate's early check of its draft against the tasks known when it was drawn
  (``find`` among given ids, registering nothing). Here a near-duplicate question is
  the same task only when it is also about the same thing: the two share a support
  passage or the answer (``same_subject``), or it is the same question word for word
  (after normalisation: one question with two answers is never two tasks). Two questions
  worded alike whose answers differ and whose evidence is disjoint are two tasks (the
  capital of France, the capital of Peru). Among 725 hand-written reference drafts no
  two candidates reach the threshold (the pairs that do are one candidate's drafts in two
  fixture files, sharing both), so the rule judges them as before; the late "duplicates"
  of a ``fake:factory`` run were template siblings sharing neither (42 of 45).
* ``SimilarityIndex``: the training export's lookup of which tasks a question or
  support set hits (MinHash LSH over a whole store's tasks). It stays conservative: any
  near-duplicate wording counts, since a training question worded like a benchmark
  question teaches its form, and benchmark folders carry no answers to compare.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable

from datasketch import MinHash, MinHashLSH

from factory.validate.matching import answer_keys, match_answer

SEED = 1  # one permutation family for every sketch, across runs


def support_key(chunk_ids: Iterable[str]) -> str:
    return "\x1f".join(sorted(set(chunk_ids)))


def question_shingles(question: str, lang: str) -> set[str]:
    keys = answer_keys(question, lang)
    return set(keys) | {f"{a} {b}" for a, b in zip(keys, keys[1:])}


def question_sketch(question: str, lang: str, num_perm: int, shingles: set[str] | None = None) -> MinHash:
    mh = MinHash(num_perm=num_perm, seed=SEED)
    for shingle in sorted(question_shingles(question, lang) if shingles is None else shingles):
        mh.update(shingle.encode("utf-8"))
    return mh


# ------------------------------------------------------------------ generation
def same_subject(support: Iterable[str], answer: str, other_support: Iterable[str], other_answer: str,
                 lang: str) -> bool:
    """Whether two tasks are about the same thing: a shared support passage, or one answer
    (the same keys, or one containing the other: 'Jobs' and 'Steve Jobs')."""
    if set(support) & set(other_support):
        return True
    return bool(match_answer(answer, [other_answer], lang, partial=False)
                or match_answer(other_answer, [answer], lang, partial=False))


@dataclass(frozen=True)
class Duplicate:
    kind: str  # near_duplicate_question | same_support
    of: str    # the task it duplicates
    jaccard: float = 1.0

    def describe(self) -> str:
        return f"{self.kind.replace('_', ' ')} of accepted task {self.of} (jaccard {self.jaccard})"


class TaskDeduper:
    def __init__(self, threshold: float = 0.7, num_perm: int = 128) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self._hashes: dict[str, MinHash] = {}
        self._supports: dict[str, str] = {}  # support key -> the first task registered with it
        self._keys: dict[str, str] = {}  # task -> its support key
        self._subjects: dict[str, tuple[frozenset[str], str, int]] = {}  # task -> (support, answer, question key)
        self._lock = threading.Lock()

    def _find(self, task_id: str, mh: MinHash, words: int, support: list[str], answer: str, lang: str,
              among: Iterable[str] | None = None) -> Duplicate | None:
        key = support_key(support)
        if among is None:
            if key in self._supports and self._supports[key] != task_id:
                return Duplicate("same_support", self._supports[key])
            others: Iterable[tuple[str, MinHash]] = self._hashes.items()
        else:
            ids = sorted(t for t in set(among) if t in self._hashes and t != task_id)
            same = next((t for t in ids if self._keys[t] == key), None)
            if same is not None:
                return Duplicate("same_support", same)
            others = [(t, self._hashes[t]) for t in ids]
        best: Duplicate | None = None
        for other, their in others:
            if other == task_id:
                continue
            jaccard = mh.jaccard(their)
            if jaccard < self.threshold or (best is not None and jaccard <= best.jaccard):
                continue
            their_support, their_answer, their_words = self._subjects[other]
            if words == their_words or same_subject(support, answer, their_support, their_answer, lang):
                best = Duplicate("near_duplicate_question", other, round(jaccard, 3))
        return best

    def find(self, question: str, support: Iterable[str], answer: str, lang: str, *, among: Iterable[str],
             task_id: str = "") -> Duplicate | None:
        """The duplicate among the registered tasks ``among``, if any; registers nothing."""
        mh, words = self._sketch(question, lang)
        with self._lock:
            return self._find(task_id, mh, words, list(support), answer, lang, among)

    def _sketch(self, question: str, lang: str) -> tuple[MinHash, int]:
        shingles = question_shingles(question, lang)
        return question_sketch(question, lang, self.num_perm, shingles), hash(frozenset(shingles))

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._hashes

    def check_and_add(self, task_id: str, question: str, support: Iterable[str], answer: str,
                      lang: str) -> Duplicate | None:
        """The duplicate found, or None after registering this task as accepted."""
        support = list(support)
        mh, words = self._sketch(question, lang)
        with self._lock:
            if task_id in self._hashes:
                return None  # already registered (a resumed run re-seeing its own task)
            found = self._find(task_id, mh, words, support, answer, lang)
            if found is None:
                self._add(task_id, mh, words, support, answer)
            return found

    def add(self, task_id: str, question: str, support: Iterable[str], answer: str, lang: str) -> None:
        if task_id in self._hashes:
            return
        mh, words = self._sketch(question, lang)
        with self._lock:
            if task_id not in self._hashes:
                self._add(task_id, mh, words, list(support), answer)

    def _add(self, task_id: str, mh: MinHash, words: int, support: list[str], answer: str) -> None:
        self._hashes[task_id] = mh
        self._keys[task_id] = support_key(support)
        self._subjects[task_id] = (frozenset(support), answer or "", words)
        self._supports.setdefault(self._keys[task_id], task_id)


# -------------------------------------------------------------------- training
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
        return question_sketch(question, self.lang, self.num_perm)

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
