"""Cost per accepted task (the run_cost and run_outcomes views of migration 011), on the card and in the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from factory.card.render import CardData, cost_lines
from factory.cli import app
from factory.cost import run_cost


def _call(run: str, stage: str, tokens_in: int, tokens_out: int, thinking: int = 0, truncated: str | None = None,
          n: int = 0) -> dict:
    return {"call_id": f"{run}-{stage}-{n}", "request_key": f"{run}-{stage}-{n}", "stage": stage, "backend": "fake",
            "model": "m", "ok": truncated is None, "attempts": 1, "tokens_in": tokens_in, "tokens_out": tokens_out,
            "thinking_tokens": thinking, "truncated": truncated, "max_tokens": 900, "latency_s": 0.1, "run_id": run}


def _populate(store) -> None:
    run = "r1"
    # four candidates: two accepted, one rejected by leakage (no agent ran), one by the agent run
    store.append("candidates", [
        {"candidate_id": f"{run}-{i}", "run_id": run, "idx": i, "status": status, "validator": validator}
        for i, (status, validator) in enumerate([("accepted", None), ("accepted", None), ("rejected", "leakage"),
                                                 ("rejected", "agent_run")])
    ])
    store.append("verdicts", [
        {"draft_id": f"{run}-{i}-a0", "candidate_id": f"{run}-{i}", "run_id": run, "attempt": 0, "step": step,
         "validator": name, "ok": ok, "hard": True, "skipped": False}
        for i, name, step, ok in [(0, "agent_run", 6, True), (1, "agent_run", 6, True), (2, "leakage", 1, False),
                                  (3, "agent_run", 6, False)]
    ])
    store.append("llm_calls", [
        _call(run, "facts", 1000, 400, n=1), _call(run, "facts", 1000, 400, n=2),
        _call(run, "compose", 800, 200, thinking=50, n=1),
        _call(run, "closed_book", 300, 20, n=1), _call(run, "closed_book", 300, 0, truncated="cut off", n=2),
        _call(run, "agent_run", 3000, 100, n=1),
        _call("other", "compose", 99_999, 99_999),  # another run: not this run's price
    ])


def test_tokens_per_accepted_task_by_stage_and_rejections_before_the_agent(store) -> None:
    _populate(store)
    cost = run_cost(store, "r1")
    assert (cost.finished, cost.accepted, cost.rejected, cost.rejected_before_agent) == (4, 2, 2, 1)
    assert cost.rejected_before_agent_share == 0.5
    assert cost.rejected_by == {"agent_run": 1, "leakage": 1}
    assert [s["stage"] for s in cost.stages] == ["facts", "compose", "closed_book", "agent_run"]  # gauntlet order
    facts = cost.stages[0]
    assert (facts["label"], facts["calls"], facts["tokens_in"], facts["tokens_in_per_accepted"]) == (
        "fact sheet", 2, 2000, 1000.0)
    closed = cost.stages[2]
    assert closed["truncated"] == 1 and closed["tokens_out_per_accepted"] == 10.0
    assert cost.stages[1]["thinking_tokens_per_accepted"] == 25.0
    assert cost.total["tokens_in"] == 6400 and cost.total["tokens_out_per_accepted"] == 560.0
    everything = run_cost(store)  # no run id: the store's runs together
    assert everything.total["tokens_in"] == 6400 + 99_999 and everything.accepted == 2


def test_cost_is_on_the_card(store) -> None:
    _populate(store)
    lines = "\n".join(cost_lines(run_cost(store, "r1").as_dict()))
    assert "## Cost per accepted task" in lines and "| fact sheet | 2 | 2,000 | 800 | 0 | 0 | 1,000 | 400 |" in lines
    assert "Rejections decided before any agent run: 1 of 2 (50%)." in lines
    assert cost_lines({}) == []
    CardData(name="n", lang="en", run_id="r1", built_at="now", target_n=2, llm_spec="fake", cost=run_cost(store, "r1").as_dict())


def test_factory_cost_prints_the_table_and_json(store) -> None:
    _populate(store)
    root = str(Path(store.root))
    shown = CliRunner().invoke(app, ["cost", "--store", root, "--run-id", "r1"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "fact sheet" in shown.output and "before any agent run: 1 (50%)" in shown.output
    raw = CliRunner().invoke(app, ["cost", "--store", root, "--run-id", "r1", "--json"])
    assert json.loads(raw.output)["rejected_before_agent_share"] == 0.5
