"""The embedded model as teacher: its round slices replay to what it was sent (slow: a real model)."""

from __future__ import annotations

import json

import pytest

from factory.index.fixed import build_index, open_index
from factory.settings import Settings
from factory.training.export import export_training
from factory.training.verify import verify_samples
from trainkit import EN_TASKS, put_chunks, put_tasks


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_runtime")
def test_embedded_teacher_samples_replay_and_mask(store, tmp_path):
    pytest.importorskip("llama_cpp")
    put_chunks(store)
    put_tasks(store, EN_TASKS[:2])  # hand-made accepted tasks: two groups, one per pool
    settings = Settings(llm={"threads": 1}, agent={"max_rounds": 1, "small": {"max_turns_per_round": 4}})
    build_index(store, tmp_path / "index", "en", settings, dense=None, progress=False)
    out = tmp_path / "out"
    summary = export_training(store, out, settings, teacher="llamacpp:smollm2-135m",
                              index=open_index(tmp_path / "index", store=store))
    pools = summary.pools["en"]
    assert summary.disjoint and len(pools.sft) == len(pools.rl) == 1
    assert summary.teacher == "llamacpp:smollm2-135m" and summary.episodes_run == 1
    samples = [json.loads(line) for line in (out / "sft" / "all.jsonl").read_text(encoding="utf-8").splitlines()]
    assert samples and all(s["protocol"] == "json" and s["profile"] == "small" for s in samples)
    report = verify_samples(store, samples)
    assert report.ok, report.problems
    # every turn was a real model call, logged by the gateway with exactly the sample's messages
    assert report.turns_matched_to_logged_calls == report.turns_replayed == sum(s["turns"] for s in samples) > 0
    assert summary.masked_turns == report.refused_turns_in_traces
