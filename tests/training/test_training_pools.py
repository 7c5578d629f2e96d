"""Pools: disjoint (task, support set, near-duplicate question), stable across reruns, benchmarks out."""

from __future__ import annotations

import json

import pytest

from factory.settings import TrainingSettings
from factory.training.pools import assign_pools, check_disjoint, stored_pools
from factory.task_similarity import SimilarityIndex
from factory.training.tasks import TrainingError, gather_benchmark_tasks, load_tasks, read_benchmark_folder
from trainkit import EN_TASKS, put_tasks, task


def _assign(store, settings=None, folders=(), seed=13, run_id="r1"):
    s = settings or TrainingSettings()
    tasks = load_tasks(store)
    bench = gather_benchmark_tasks(store, folders, include_build_runs=s.exclude_build_runs)
    return tasks, assign_pools(store, tasks, bench, s, seed=seed, run_id=run_id)


def test_near_duplicate_and_shared_support_are_detected():
    index = SimilarityIndex("en", 0.7, 128)
    t01, t02, t09, t10 = (next(t for t in EN_TASKS if t["task_id"] == i) for i in ("t01", "t02", "t09", "t10"))
    index.add("t01", t01["question"], t01["support_chunk_ids"])
    index.add("t02", t02["question"], t02["support_chunk_ids"])
    same = index.matches(t09["question"], t09["support_chunk_ids"])
    assert [(m.key, m.kind) for m in same] == [("t01", "same_support")]  # the same chunks in another order
    near = index.matches(t10["question"], t10["support_chunk_ids"])
    assert [(m.key, m.kind) for m in near] == [("t02", "near_duplicate")] and near[0].jaccard >= 0.7
    # unrelated questions do not match
    assert index.matches(EN_TASKS[3]["question"], EN_TASKS[3]["support_chunk_ids"]) == []


def test_pools_are_disjoint_and_linked_tasks_share_a_pool(store):
    put_tasks(store, EN_TASKS)
    tasks, report = _assign(store)
    pools = report.langs["en"]
    assert sorted(pools.sft + pools.rl) == sorted(t["task_id"] for t in EN_TASKS)
    assert not set(pools.sft) & set(pools.rl)
    assert report.pool_of("t01") == report.pool_of("t09")  # shared support set
    assert report.pool_of("t02") == report.pool_of("t10")  # near-duplicate question
    by_id = {t.task_id: t for t in tasks}
    assert check_disjoint([by_id[i] for i in pools.sft], [by_id[i] for i in pools.rl], TrainingSettings()) == []
    # 10 tasks in 8 groups: the share is met as closely as whole groups allow
    assert abs(len(pools.sft) - len(pools.rl)) <= 2
    stored = stored_pools(store)
    assert {i: d.pool for i, d in stored.items()} == {**{i: "sft" for i in pools.sft}, **{i: "rl" for i in pools.rl}}


def test_check_disjoint_finds_a_leak():
    from factory.training.tasks import TrainingTask

    def tt(row):
        return TrainingTask(task_id=row["task_id"], lang="en", question=row["question"],
                            support_chunk_ids=row["support_chunk_ids"])

    by_id = {t["task_id"]: tt(t) for t in EN_TASKS}
    problems = check_disjoint([by_id["t01"], by_id["t02"]], [by_id["t09"], by_id["t10"], by_id["t04"]], TrainingSettings())
    assert sorted(p[0] for p in problems) == ["t09", "t10"]


def test_share_zero_puts_everything_in_rl(store):
    put_tasks(store, EN_TASKS)
    _, all_rl = _assign(store, TrainingSettings(sft_share=0.0), run_id="a")
    assert all_rl.langs["en"].sft == [] and len(all_rl.langs["en"].rl) == 10


def test_caps_hold_back_groups(store):
    put_tasks(store, EN_TASKS)
    _, report = _assign(store, TrainingSettings(sft_max=2, rl_max=3))
    pools = report.langs["en"]
    assert len(pools.sft) <= 2 and len(pools.rl) <= 3
    assert len(pools.sft) + len(pools.rl) + len(pools.held) == 10
    assert set(pools.held).isdisjoint(stored_pools(store))  # held tasks are not recorded: a later run decides


def test_stable_across_reruns_with_appended_tasks(store):
    put_tasks(store, EN_TASKS[:8])
    _, first = _assign(store, run_id="r1")
    before = {i: d.pool for i, d in stored_pools(store).items()}
    # rerun with nothing new: nothing written, nothing moved
    _, again = _assign(store, run_id="r2")
    assert again.written == 0 and {i: d.pool for i, d in stored_pools(store).items()} == before
    # appended: t09 (support of t01), t10 (near-dup of t02), and a task linking an SFT and an RL task
    sft_task = next(t for t in EN_TASKS[:8] if before[t["task_id"]] == "sft")
    rl_task = next(t for t in EN_TASKS[:8] if before[t["task_id"]] == "rl")
    bridge = task("t11", rl_task["question"].replace("?", " ?"), sft_task["support_chunk_ids"][::-1])
    fresh = [task(f"n{i:02d}", f"Unrelated question number {w} about {w} things?", [f"c{i}a", f"c{i}b"])
             for i, w in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])]
    put_tasks(store, EN_TASKS[8:] + [bridge] + fresh)
    _, third = _assign(store, run_id="r3")
    after = stored_pools(store)
    assert all(after[i].pool == p for i, p in before.items())  # earlier decisions stand
    assert after["t09"].pool == before["t01"] and after["t09"].reason == "group"
    assert after["t10"].pool == before["t02"] and after["t10"].reason == "group"
    assert after["t11"].pool == "excluded" and after["t11"].reason == "bridges_pools"
    assert third.written == 3 + len(fresh)
    assert {after[t["task_id"]].pool for t in fresh} == {"sft", "rl"}
    # the new groups went to the pool further below its share
    pools = third.langs["en"]
    assert abs(len(pools.sft) - len(pools.rl)) <= 2


def test_benchmark_tasks_and_near_duplicates_are_excluded(store, tmp_path):
    put_tasks(store, EN_TASKS)
    bench = tmp_path / "bench"
    bench.mkdir()
    t03 = next(t for t in EN_TASKS if t["task_id"] == "t03")
    t05 = next(t for t in EN_TASKS if t["task_id"] == "t05")
    rows = [
        {"task_id": "t04", "question": "any", "support_chunk_ids": ["zz"], "lang": "en"},  # the same task
        {"task_id": "b1", "question": t03["question"].replace("wrote", "authored"), "support_chunk_ids": ["q"],
         "lang": "en"},  # a near-duplicate question
        {"task_id": "b2", "question": "Completely different wording here?", "support_chunk_ids":
            list(reversed(t05["support_chunk_ids"])), "lang": "en"},  # the same support set
    ]
    (bench / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    _, report = _assign(store, folders=[bench])
    excluded = report.langs["en"].excluded
    assert excluded == {"t04": "benchmark_task", "t03": "benchmark_near_duplicate", "t05": "benchmark_same_support"}
    for pools in report.langs.values():
        assert not {"t03", "t04", "t05"} & set(pools.sft + pools.rl)
    # recorded: a later export excludes them without the folder
    _, later = _assign(store, run_id="r2")
    assert set(later.langs["en"].excluded) == {"t03", "t04", "t05"}


def test_build_runs_are_benchmarks_and_late_exclusion(store):
    put_tasks(store, EN_TASKS[:8])
    _, first = _assign(store, run_id="r1")
    was = first.pool_of("t02")
    # a benchmark is built later from the same corpus with a near-duplicate of t02
    near = task("b-t02", EN_TASKS[1]["question"].replace("town's", "town"), ["en_place_001_0", "x"], run_id="build-abc")
    put_tasks(store, [near])
    store.append("runs", [{"run_id": "build-abc", "command": "build-benchmark"}])
    _, second = _assign(store, run_id="r2")
    assert second.langs["en"].excluded["b-t02"] == "benchmark_task"
    assert second.langs["en"].excluded["t02"] == "benchmark_near_duplicate"
    assert second.langs["en"].newly_excluded == ["t02"]
    assert stored_pools(store)["t02"].detail["was"] == was


def test_bad_benchmark_folder_names_file_and_line(tmp_path):
    (tmp_path / "tasks.jsonl").write_text('{"task_id": "a", "question": "q"}\nnot json\n', encoding="utf-8")
    with pytest.raises(TrainingError, match=r"tasks\.jsonl:2: not JSON"):
        read_benchmark_folder(tmp_path)
    with pytest.raises(TrainingError, match="no tasks.jsonl"):
        read_benchmark_folder(tmp_path / "missing")
