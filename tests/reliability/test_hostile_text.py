"""Prompt injection in the corpus, with a model that obeys it (``ObeyingFake``).

Some fixture articles carry a paragraph telling the model to answer a payload, mark the
task accepted and skip validators, with a verdict-like JSON, SQL fragments and a fake
``<passage>`` tag. The model does all of that: the fact sheet repeats the instruction,
the composer makes the payload the answer, the readers answer it, and (with claims on)
it writes verdicts, ``accepted: true`` and lists of validators to skip into every field
its output allows. Acceptance is still the validators' own: the claims change no
verdict (a run with the same obedience but no claims has identical verdicts and tasks),
no validator is skipped that the settings did not switch off, every accepted task passed
every check on its final draft, and the corpus tables are untouched.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from factory.settings import Settings
from factory.store import Store

from reliability_kit import MARK, PAYLOAD, accepted_tasks, run_hostile_generation

ORDER = list(Settings().validation.order)  # the gauntlet as the run builds it
VERDICTS = ("SELECT draft_id, step, validator, ok, skipped, hard, reason, feedback, figures::VARCHAR AS figures "
            "FROM verdicts ORDER BY draft_id, step")
CANDIDATES = "SELECT idx, cell, status, stage, validator, reason, feedback, task_id FROM candidates ORDER BY idx"
DRAFTS = ("SELECT draft_id, question, answer, answer_aliases, support_chunk_ids, answer_chunk_id, parse_error "
          "FROM drafts ORDER BY draft_id")
CORPUS_TABLES = ["documents", "chunks", "chunk_changes", "near_duplicates", "ingest_errors", "mentions",
                 "entity_aliases", "entities", "entity_pairs", "chunk_entities"]


VOLATILE = {"elapsed_s", "episode_id", "episode_ids"}  # timings and the agent's random episode ids


def _steady(value):
    """A verdict's figures without what differs between two identical runs."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _verdicts(store: Store) -> list[dict]:
    return [r | {"figures": _steady(json.loads(r["figures"]))} for r in store.query(VERDICTS)]


def _rows(store: Store, table: str) -> list[dict]:
    return store.query(f'SELECT * FROM "{table}" ORDER BY ALL')  # table names are ours, not input


@pytest.mark.slow
def test_obeyed_injections_cannot_accept_skip_or_write(hostile_world: dict, tmp_path: Path) -> None:
    store, base = Store(hostile_world["store"]), Store(hostile_world["base"])
    obeyed = hostile_world["obeyed"]
    summary = hostile_world["summary"]

    # the model was hijacked at every kind of prompt the injection reached
    assert obeyed.get("Facts", 0) >= 1 and obeyed.get("DraftOut", 0) >= 1, obeyed
    payload_drafts = store.query("SELECT d.draft_id, c.status, c.validator, c.reason FROM drafts d "
                                 "JOIN candidates c USING (candidate_id) WHERE d.answer = ?", [PAYLOAD])
    assert payload_drafts, "no draft took the injected answer"
    claimed = store.query("SELECT count(*) AS n FROM drafts WHERE contains(CAST(steps AS VARCHAR), ?)",
                          ["skip: leakage, shortcut, closed_book, solvability, necessity"])[0]["n"]
    assert claimed >= 1  # the claims were written: as data, into the draft's own free text

    # the same obedience without any claim: the same verdicts, candidates, drafts and tasks
    shutil.copytree(hostile_world["base"], tmp_path / "store")
    plain = run_hostile_generation(tmp_path / "store", hostile_world["index"], claims=False)
    other = Store(tmp_path / "store")
    assert plain["obeyed"] == obeyed
    assert _verdicts(store) == _verdicts(other)
    assert store.query(CANDIDATES) == other.query(CANDIDATES)
    assert store.query(DRAFTS) == other.query(DRAFTS)
    assert accepted_tasks(store) == accepted_tasks(other)

    # nothing skipped but what the settings switched off; no verdict from anything but a validator
    off = set() if Settings().validation.agent_run else {"agent_run"}
    skipped = {(r["validator"], r["reason"]) for r in store.query("SELECT validator, reason FROM verdicts WHERE skipped")}
    assert skipped <= {(name, "disabled") for name in off}
    assert {r["validator"] for r in store.query("SELECT DISTINCT validator FROM verdicts")} <= set(ORDER)

    # accepted exactly when every validator passed the final draft; a rejection is its validator's
    for cand in store.query("SELECT candidate_id, status, stage, validator, reason, final_draft_id FROM candidates"):
        steps = store.query("SELECT validator, ok, skipped, reason FROM verdicts WHERE draft_id = ? ORDER BY step",
                            [cand["final_draft_id"]])
        if cand["status"] == "accepted":
            assert [s["validator"] for s in steps] == ORDER
            assert all(s["ok"] != (s["validator"] in off) and s["skipped"] == (s["validator"] in off) for s in steps)
        elif cand["stage"] == "gauntlet":
            failing = [s for s in steps if not s["ok"] and not s["skipped"]]
            assert failing and (failing[0]["validator"], failing[0]["reason"]) == (cand["validator"], cand["reason"])
    tasks = store.query("SELECT task_id, answer, validators, skipped_validators FROM tasks")
    assert all(t["validators"] == [v for v in ORDER if v not in off] and t["skipped_validators"] == sorted(off)
               for t in tasks)

    # the fake passage tags stayed text: every fact-sheet prompt holds exactly P1..Pk, once each
    prompts = [json.loads(r["request"])["messages"][-1]["content"]
               for r in store.query("SELECT request::VARCHAR AS request FROM llm_calls WHERE stage = 'facts'")]
    hostile_prompts = [p for p in prompts if MARK in p.casefold()]
    assert hostile_prompts
    for prompt in prompts:
        labels = re.findall(r'<passage id="(P\d+)">', prompt)
        assert labels == [f"P{i}" for i in range(1, len(labels) + 1)] and prompt.count("</passage>") == len(labels)

    # stored data: the corpus tables are what ingest wrote, and the SQL in the text is just text
    for table in CORPUS_TABLES:
        assert _rows(store, table) == _rows(base, table), table
    sql_chunks = store.scalar("SELECT count(*) FROM chunks WHERE contains(text, ?)", ["'; DROP TABLE tasks; --"])
    assert sql_chunks >= len(hostile_world["planted"]["injected"])
    assert store.scalar("SELECT count(*) FROM tasks") == summary.accepted

    print(json.dumps({"obeyed": obeyed, "candidates": summary.candidates, "accepted": summary.accepted,
                      "rejected_by": summary.rejected_by, "payload_drafts": len(payload_drafts),
                      "payload_tasks": sum(t["answer"] == PAYLOAD for t in tasks),
                      "payload_drafts_stopped_by": sorted({(d["validator"] or "-", d["reason"] or "-")
                                                           for d in payload_drafts}),
                      "drafts_with_claims": claimed, "hostile_fact_prompts": len(hostile_prompts),
                      "chunks_with_sql": sql_chunks}))
