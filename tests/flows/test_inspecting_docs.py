"""docs/inspecting.md stays true: its views exist and every SQL example runs."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

DOC = Path(__file__).resolve().parents[2] / "docs" / "inspecting.md"
VIEWS = ["rejected_tasks", "attempts", "verdicts", "funnel", "accepted_tasks", "llm_usage", "llm_calls"]


def _populate(store) -> None:
    run, cid = "run-docs", "run-docs/c00000"
    store.append("candidates", [
        {"candidate_id": cid, "run_id": run, "idx": 0, "status": "rejected", "cell": "chain/direct/person",
         "stage": "gauntlet", "validator": "leakage", "reason": "answer_leaked", "feedback": "names 'Vellmoor'",
         "final_draft_id": f"{cid}/1", "attempts": 2, "revisions": 1, "tokens": 120},
        {"candidate_id": "run-docs/c00001", "run_id": run, "idx": 1, "status": "accepted", "cell": "chain/direct/person",
         "attempts": 2, "revisions": 1, "task_id": "run-docs/c00001", "tokens": 90},
    ])
    store.append("drafts", [
        {"draft_id": f"{c}/{a}", "candidate_id": c, "run_id": run, "attempt": a, "origin": "compose" if a == 0 else "revise",
         "question": f"q{a}", "answer": "Vellmoor", "support_chunk_ids": ["d_0", "e_0"]}
        for c in (cid, "run-docs/c00001") for a in (0, 1)
    ] + [{"draft_id": "run-docs/c00002/0", "candidate_id": "run-docs/c00002", "run_id": run, "attempt": 0,
          "origin": "compose", "cell": "intersection/direct/date", "question": "", "answer": "",
          "declined": "the two passages share only a coincidental year", "support_chunk_ids": ["f_0", "g_0"]}])
    store.append("verdicts", [
        {"draft_id": f"{c}/{a}", "candidate_id": c, "run_id": run, "attempt": a, "step": 1, "validator": "leakage",
         "ok": not (a == 0 or c == cid), "hard": True, "skipped": False, "reason": "answer_leaked",
         "feedback": "the question names 'Vellmoor'", "figures": {"leaked": ["Vellmoor"]}, "elapsed_s": 0.01}
        for c in (cid, "run-docs/c00001") for a in (0, 1)
    ])
    store.append("tasks", [{"task_id": "run-docs/c00001", "run_id": run, "candidate_id": "run-docs/c00001",
                            "question": "q1", "answer": "Vellmoor", "revisions": 1, "cell": "chain/direct/person"}])
    store.append("llm_calls", [{"call_id": "x", "request_key": "k", "stage": "compose", "backend": "fake", "model": "m",
                                "ok": True, "tokens_in": 10, "tokens_out": 5, "latency_s": 0.1, "run_id": run}])


def test_views_exist_and_examples_run(store) -> None:
    _populate(store)
    text = DOC.read_text(encoding="utf-8")
    for view in VIEWS:
        assert f"`{view}`" in text
    blocks = re.findall(r"```sql\n(.*?)```", text, re.DOTALL)
    assert len(blocks) >= 7
    con = store.connect()
    try:
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert set(VIEWS) <= names
        results = [con.execute(sql).fetchall() for sql in blocks]
    finally:
        con.close()
    assert results[0] == [("leakage", "answer_leaked", 1)]
    assert results[3] and [r[0] for r in results[3]] == [0, 1]  # the rejected candidate's two drafts
    assert [r[:2] for r in results[4]] == [("intersection/direct/date", "the two passages share only a coincidental year")]
    assert results[5] == [("run-docs/c00001", 1, "leakage", "the question names 'Vellmoor'")]
    # the catalog a second terminal opens holds the same views
    store.refresh_catalog()
    ro = duckdb.connect(str(store.catalog_path), read_only=True)
    try:
        assert ro.execute("SELECT count(*) FROM rejected_tasks").fetchone()[0] == 1
    finally:
        ro.close()


def test_live_view_snapshot_reads_the_same_views(store) -> None:
    from factory.commands.build import LiveView, snapshot

    _populate(store)
    data = snapshot(store, "run-docs")
    assert data == {"accepted": 1, "rejected": 1, "in_flight": 0, "rejected_by": [("leakage", 1)], "revisions": 2,
                    "llm_calls": 1, "tokens": 15}
    view = LiveView(store.root, "run-docs", 5, started=0.0)
    view.data = data
    from rich.console import Console

    console = Console(record=True, width=80)
    console.print(view.render())
    text = console.export_text()
    assert "1 / 5" in text and "by leakage" in text and "15 tokens" in text
