"""export_training end to end: files load with `datasets`, pools grow by appending, the CLI."""

from __future__ import annotations

import json

import pytest

from factory.index.fixed import build_index, open_index
from factory.settings import Settings
from factory.training.export import export_training
from factory.training.pools import stored_pools
from trainkit import EN_TASKS, put_chunks, put_tasks, teacher_llm

SETTINGS = Settings(agent={"profile": "standard"})


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def world(store, tmp_path):
    put_chunks(store)
    put_tasks(store, EN_TASKS[:8])
    build_index(store, tmp_path / "index", "en", SETTINGS, dense=None, progress=False)
    bench = tmp_path / "bench"
    bench.mkdir()
    t08 = EN_TASKS[7]
    (bench / "tasks.jsonl").write_text(json.dumps({"task_id": "b-1", "lang": "en", "question": t08["question"],
                                                   "support_chunk_ids": ["other_0"]}) + "\n", encoding="utf-8")
    return {"store": store, "index": open_index(tmp_path / "index", store=store), "bench": bench, "out": tmp_path / "out"}


def test_export_end_to_end_and_rerun(world, tmp_path):
    store, out = world["store"], world["out"]
    llm = teacher_llm("tools")
    summary = export_training(store, out, SETTINGS, llm=llm, index=world["index"], exclude_benchmarks=[world["bench"]],
                              run_id="train-1")
    pools = summary.pools["en"]
    assert pools.excluded == {"t08": "benchmark_near_duplicate"}
    assert summary.disjoint and not set(pools.sft) & set(pools.rl)
    assert len(pools.sft) + len(pools.rl) == 7 and pools.sft and pools.rl
    assert summary.episodes_run == summary.episodes == len(pools.sft)

    # SFT: round-sliced samples, OpenAI layout, loadable by `datasets`
    every = _jsonl(out / "sft" / "all.jsonl")
    mixed = _jsonl(out / "sft" / "train.jsonl")
    assert len(every) == summary.samples_before > len(pools.sft)
    assert len(mixed) == summary.samples_after > 0
    assert {s["task_id"] for s in every} == set(pools.sft)
    assert summary.masked_turns == sum(1 for s in every for m in s["messages"] if m.get("weight") == 0) > 0

    from datasets import load_dataset

    cache = str(tmp_path / "hf-cache")
    sft = load_dataset("json", data_files=str(out / "sft" / "train.jsonl"), split="train", cache_dir=cache)
    assert len(sft) == len(mixed)
    assert {"messages", "tools", "final_recall", "low_recall", "round_no", "ending_action"} <= set(sft.column_names)
    first = sft[0]
    assert first["messages"][0]["role"] == "system" and first["tools"][0]["type"] == "function"
    assert {m["weight"] for m in first["messages"] if m["role"] == "assistant"} <= {0, 1}
    sft_pq = load_dataset("parquet", data_files=str(out / "sft" / "train.parquet"), split="train", cache_dir=cache)
    assert len(sft_pq) == len(mixed) and sft_pq[0]["sample_id"] == mixed[0]["sample_id"]
    assert [m["content"] for m in sft_pq[0]["messages"]] == [m["content"] for m in mixed[0]["messages"]]
    assert json.loads(sft_pq[0]["tools"]) == mixed[0]["tools"]

    # RL: question, gold chunk ids, language
    rl = load_dataset("json", data_files=str(out / "rl" / "train.jsonl"), split="train", cache_dir=cache)
    assert sorted(rl["task_id"]) == sorted(pools.rl)
    row = rl[0]
    source = next(t for t in EN_TASKS if t["task_id"] == row["task_id"])
    assert row["question"] == source["question"] and row["gold_chunk_ids"] == source["support_chunk_ids"]
    assert row["lang"] == "en"
    assert len(load_dataset("parquet", data_files=str(out / "rl" / "train.parquet"), split="train",
                            cache_dir=cache)) == len(pools.rl)

    card = (out / "card.md").read_text(encoding="utf-8")
    assert "Total variation distance" in card and "benchmark_near_duplicate" in card
    report = json.loads((out / "datamix.json").read_text(encoding="utf-8"))
    assert report[0]["samples_before"] == len(every)
    assert store.scalar("SELECT count(*) FROM training_exports") == 1

    # a scheduled rerun with more tasks only appends: pools kept, only the new SFT tasks are run
    before = {i: d.pool for i, d in stored_pools(store).items()}
    put_tasks(store, EN_TASKS[8:])
    calls = llm.calls
    second = export_training(store, out, SETTINGS, llm=llm, index=world["index"], run_id="train-2")
    after = stored_pools(store)
    assert all(after[i].pool == p for i, p in before.items())
    new_sft = [i for i in ("t09", "t10") if after[i].pool == "sft"]
    assert second.episodes_run == len(new_sft) and second.episodes == summary.episodes + len(new_sft)
    assert (llm.calls > calls) == bool(new_sft)
    assert second.pools["en"].excluded == {"t08": "benchmark_near_duplicate"}  # remembered without the folder


def test_export_without_teacher_writes_pools_only(world):
    summary = export_training(world["store"], world["out"], SETTINGS)
    assert summary.teacher is None and summary.episodes == 0 and summary.samples_before == 0
    assert summary.rl_tasks == len(summary.pools["en"].rl)
    assert (world["out"] / "sft" / "train.jsonl").read_text() == ""


def test_cli_export_training(world, monkeypatch):
    from typer.testing import CliRunner

    from factory.cli import app

    monkeypatch.setenv("FACTORY_AGENT__MAX_ROUNDS", "2")  # the rule fake never finalizes: keep episodes short
    result = CliRunner().invoke(app, [
        "export-training", "--store", str(world["store"].root), "--out", str(world["out"]), "--teacher", "fake",
        "--exclude-benchmark", str(world["bench"]), "--sft-share", "0.5", "--seed", "3", "--max-teacher-tasks", "2",
        "--json",
    ])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["teacher"] == "fake" and summary["seed"] == 3 and summary["disjoint"]
    assert summary["episodes_run"] == 2  # the budget: two SFT tasks this run
    assert (world["out"] / "index" / "en" / "manifest.json").is_file()  # no --index: a BM25 index was built
    bad = CliRunner().invoke(app, ["export-training", "--store", str(world["store"].root), "--out",
                                   str(world["out"]), "--exclude-benchmark", str(world["out"] / "nope")])
    assert bad.exit_code != 0
