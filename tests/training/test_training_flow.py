"""The export as a Prefect flow, as the scheduled deployment runs it at its end (slow: a Prefect server)."""

from __future__ import annotations

import json

import pytest

from trainkit import EN_TASKS, put_chunks, put_tasks


@pytest.mark.slow
def test_export_training_flow(store, tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect_home"))
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    monkeypatch.setenv("FACTORY_AGENT__MAX_ROUNDS", "1")
    from prefect.testing.utilities import prefect_test_harness

    from flows.export_training_data import export_training_data

    put_chunks(store)
    put_tasks(store, EN_TASKS)
    out = tmp_path / "out"
    with prefect_test_harness(server_startup_timeout=180):
        first = export_training_data(store=str(store.root), out=str(out), teacher="fake", seed=5)
        put_tasks(store, [dict(EN_TASKS[0], task_id="t99", question="An entirely new question about Kell Island?",
                               support_chunk_ids=["en_place_kell_0", "en_lake_tessaly_0"])])
        second = export_training_data(store=str(store.root), out=str(out), teacher="fake", seed=5)
    assert first["disjoint"] and second["disjoint"]
    assert first["episodes_run"] == len(first["pools"]["en"]["sft"]) > 0
    for pool in ("sft", "rl"):  # the second run only appended
        assert set(first["pools"]["en"][pool]) <= set(second["pools"]["en"][pool])
    assert second["episodes_run"] == (1 if "t99" in second["pools"]["en"]["sft"] else 0)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["run_id"] == second["run_id"] and summary["tasks"] == 11
