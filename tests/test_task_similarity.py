"""Near-duplicate accepted tasks: MinHash over question shingles about the same thing, and identical support sets."""

from __future__ import annotations

import threading

from factory.task_similarity import SimilarityIndex, TaskDeduper, same_subject


def test_near_duplicate_question_and_same_support():
    d = TaskDeduper(threshold=0.7)
    q = "Which composer founded the choir whose singers mostly worked at the ironworks beside the river?"
    assert d.check_and_add("t1", q, ["a", "b"], "Edward Elgar", "en") is None
    near = d.check_and_add("t2", q.replace("composer", "musician"), ["c", "d"], "Elgar", "en")
    assert near is not None and near.kind == "near_duplicate_question" and near.of == "t1"
    other = "In which year was the lighthouse on the largest island of the lake automated?"
    assert d.check_and_add("t3", other, ["e", "f"], "1921", "en") is None
    same = d.check_and_add("t4", "A completely different question about a ferry and a chess tournament?",
                           ["f", "e"], "Riga", "en")
    assert same is not None and same.kind == "same_support" and same.of == "t3"


def test_questions_worded_alike_about_different_things_are_two_tasks():
    """The same wording with another answer and disjoint evidence is a sibling, not a duplicate;
    a shared passage makes it one again."""
    d = TaskDeduper(threshold=0.7)
    q = "Which composer founded the choir whose singers mostly worked at the ironworks beside the river?"
    assert d.check_and_add("t1", q, ["a", "b"], "Edward Elgar", "en") is None
    sibling = q.replace("ironworks", "brickworks")
    assert d.find(sibling, ["c", "d"], "Gustav Holst", "en", among={"t1"}) is None
    assert d.check_and_add("t2", sibling, ["c", "d"], "Gustav Holst", "en") is None
    third = q.replace("ironworks", "glassworks")
    found = d.check_and_add("t3", third, ["d", "x"], "Ralph Vaughan Williams", "en")
    assert found is not None and found.of == "t2" and found.kind == "near_duplicate_question"
    # one question with two answers is never two tasks, whatever its evidence
    again = d.check_and_add("t4", sibling.replace("Which", "which"), ["y", "z"], "Frederick Delius", "en")
    assert again is not None and again.of == "t2"


def test_same_subject_reads_answers_as_answer_matching_does():
    assert same_subject(["a"], "Steve Jobs", ["b"], "Jobs", "en")
    assert same_subject(["a"], "5,200 workers", ["b"], "5200", "en")
    assert same_subject(["a", "b"], "1812", ["b"], "1066", "en")
    assert not same_subject(["a"], "1812 года", ["b"], "6 процентов", "ru")
    assert not same_subject(["a"], "", ["b"], "", "en")  # no answer to compare: the passages decide


def test_the_training_export_counts_any_near_duplicate_wording():
    index = SimilarityIndex("en", 0.7, 128)
    q = "Which composer founded the choir whose singers mostly worked at the ironworks beside the river?"
    index.add("b1", q, ["a", "b"])
    assert [m.key for m in index.matches(q.replace("ironworks", "brickworks"), ["c", "d"])] == ["b1"]


def test_russian_inflection_does_not_hide_a_duplicate():
    d = TaskDeduper(threshold=0.7)
    d.add("t1", "Какой композитор основал хор, певцы которого работали на заводе у реки?", ["a"], "Глинка", "ru")
    dup = d.check_and_add("t2", "Какой композитор основал хор, певцы которого работали на заводах у реки?", ["b"],
                          "Глинки", "ru")
    assert dup is not None and dup.of == "t1"


def test_the_same_task_again_is_not_its_own_duplicate_and_races_admit_one():
    d = TaskDeduper()
    q = "Which river feeds the lake whose only island has a lighthouse built in 1866?"
    assert d.check_and_add("t1", q, ["a", "b"], "Shannon", "en") is None
    assert d.check_and_add("t1", q, ["a", "b"], "Shannon", "en") is None  # a resumed run re-seeing its task
    results = []
    barrier = threading.Barrier(8)

    def accept(i):
        barrier.wait()
        results.append(d.check_and_add(f"x{i}", "One and the same new question about a towpath?", [f"s{i}"],
                                       "the Grand Union", "en"))

    threads = [threading.Thread(target=accept, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is None for r in results) == 1
