"""Near-duplicate accepted tasks: MinHash over question shingles, and identical support sets."""

from __future__ import annotations

import threading

from factory.task_similarity import TaskDeduper


def test_near_duplicate_question_and_same_support():
    d = TaskDeduper(threshold=0.7)
    q = "Which composer founded the choir whose singers mostly worked at the ironworks beside the river?"
    assert d.check_and_add("t1", q, ["a", "b"], "en") is None
    near = d.check_and_add("t2", q.replace("composer", "musician"), ["c", "d"], "en")
    assert near is not None and near.kind == "near_duplicate_question" and near.of == "t1"
    other = "In which year was the lighthouse on the largest island of the lake automated?"
    assert d.check_and_add("t3", other, ["e", "f"], "en") is None
    same = d.check_and_add("t4", "A completely different question about a ferry and a chess tournament?",
                           ["f", "e"], "en")
    assert same is not None and same.kind == "same_support" and same.of == "t3"


def test_russian_inflection_does_not_hide_a_duplicate():
    d = TaskDeduper(threshold=0.7)
    d.add("t1", "Какой композитор основал хор, певцы которого работали на заводе у реки?", ["a"], "ru")
    dup = d.check_and_add("t2", "Какой композитор основал хор, певцы которого работали на заводах у реки?", ["b"], "ru")
    assert dup is not None and dup.of == "t1"


def test_the_same_task_again_is_not_its_own_duplicate_and_races_admit_one():
    d = TaskDeduper()
    q = "Which river feeds the lake whose only island has a lighthouse built in 1866?"
    assert d.check_and_add("t1", q, ["a", "b"], "en") is None
    assert d.check_and_add("t1", q, ["a", "b"], "en") is None  # a resumed run re-seeing its task
    results = []
    barrier = threading.Barrier(8)

    def accept(i):
        barrier.wait()
        results.append(d.check_and_add(f"x{i}", "One and the same new question about a towpath?", [f"s{i}"], "en"))

    threads = [threading.Thread(target=accept, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is None for r in results) == 1
