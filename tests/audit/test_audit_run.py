"""The audit on a tiny hand-made folder: verdicts, skipped validators with reasons, outputs, store rows."""

from __future__ import annotations

import json
import re

import pytest

from factory.audit import run_audit
from factory.llm.fake import FakeLLM
from factory.llm.types import LLMRequest
from factory.settings import Settings

from audit_folder import NEEDS, QUERIES, write_folder

QUESTION_OF = {q["text"]: q["_id"] for q in QUERIES}
ANSWER_OF = {q["_id"]: q.get("answer") or (q.get("answers") or [""])[0] for q in QUERIES}


def _settings(**audit) -> Settings:
    # ten passages: a top 10 would hold everything, so the shortcut looks at the top 2
    return Settings(validation={"shortcut_k": 2, "shortcut_searchers": ["bm25"]}, audit=audit)


def scripted_reader(request: LLMRequest):
    """Knows q1's answer without evidence; with evidence, answers when every passage it needs is given."""
    prompt = request.messages[-1].content or ""
    question = re.search(r"Question: (.*)", prompt).group(1).strip()
    qid = QUESTION_OF[question]
    if "no documents" in prompt:
        return {"answer": ANSWER_OF[qid] if qid == "q1" else "unknown"}
    given = set(re.findall(r"^\[([^\]]+)\]", prompt, re.MULTILINE))
    answer = ANSWER_OF[qid] if NEEDS[qid] <= given else "unknown"
    return {"reasoning": "from the passages", "answer": answer, "other_answers": []}


def _by_id(result):
    return {item.question.qid: item for item in result.questions}


def _status(item, name):
    verdict = next(v for v in item.verdicts if v.validator == name)
    return item.status(verdict), verdict


def test_retrieval_only_audit(tmp_path):
    root = write_folder(tmp_path / "bench")
    result = run_audit(root, tmp_path / "out", _settings(), lang="en", dense="none")
    items = _by_id(result)
    assert sorted(items) == ["q1", "q2", "q3", "q4", "q5"]
    assert _status(items["q1"], "shortcut")[0] == "flag"  # copies its passage
    status, verdict = _status(items["q2"], "shortcut")
    assert status == "pass", verdict  # worded away from its passages
    assert _status(items["q4"], "schema")[1].reason == "unknown_chunk"
    assert _status(items["q5"], "leakage")[1].reason == "bridge_leaked"
    assert _status(items["q1"], "leakage")[0] == "pass"
    # what could not run says why
    status, verdict = _status(items["q3"], "leakage")
    assert (status, verdict.reason) == ("skip", "no_answer")
    for name in ("closed_book", "solvability", "necessity"):
        assert _status(items["q1"], name)[1].reason == "no_llm"
    assert _status(items["q1"], "agent_run")[1].reason == "not_requested"
    # the answer passage of q2 is the one holding "forty-two"
    assert items["q2"].answer_chunks == ["d3_0"]

    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["questions"] == 5 and summary["unjudged_queries"] == 1
    shortcut = summary["per_validator"]["shortcut"]
    flagged = sum(1 for i in items.values() if "shortcut" in i.names("flag"))
    assert shortcut["ran"] == 5 and shortcut["flagged"] == flagged and shortcut["share_flagged"] == round(flagged / 5, 4)
    assert summary["per_validator"]["closed_book"] == {**summary["per_validator"]["closed_book"], "ran": 0,
                                                      "not_run_reasons": {"no_llm": 5}}
    assert any("closed_book did not run on any question: no_llm" in n for n in summary["notes"])
    assert summary["overall"]["flagged"] == sum(1 for i in items.values() if i.flagged)
    funnel = summary["funnel"]
    assert [r["validator"] for r in funnel][:4] == ["schema", "answerable", "leakage", "shortcut"]
    assert all(a["remaining"] == b["entered"] for a, b in zip(funnel, funnel[1:]))

    lines = [json.loads(line) for line in (tmp_path / "out" / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["qid"] for r in lines] == ["q1", "q2", "q3", "q4", "q5"]
    assert lines[0]["verdicts"]["shortcut"]["status"] == "flag" and lines[0]["best_rank"] == 1
    assert set(lines[0]["verdicts"]) == {"schema", "answerable", "leakage", "shortcut", "closed_book", "solvability",
                                         "necessity", "agent_run"}
    assert lines[0]["verdicts"]["answerable"]["reason"] == "no_steps"  # a benchmark's tasks carry no steps
    card = (tmp_path / "out" / "card.md").read_text(encoding="utf-8")
    assert "## Funnel" in card and "## Worst examples" in card and "**q1**" in card
    assert (tmp_path / "out" / "card.html").read_text(encoding="utf-8").startswith("<!doctype html>")


def test_rows_in_the_store(tmp_path):
    from factory.store import Store

    root = write_folder(tmp_path / "bench")
    result = run_audit(root, tmp_path / "out", _settings(), lang="en", dense="none")
    store = Store(tmp_path / "out" / "store")
    chunks = store.query("SELECT chunk_id, doc_id, n FROM chunks ORDER BY chunk_id")
    assert chunks[0] == {"chunk_id": "d1_0", "doc_id": "d1", "n": 0} and chunks[1]["n"] == 1  # the benchmark's ids
    rows = store.query("SELECT qid, validator, status, reason FROM audit_verdicts WHERE audit_id = ? ORDER BY qid, step",
                       [result.audit_id])
    assert len(rows) == 5 * 8
    flags = store.query("SELECT qid, validator FROM audit_flags WHERE audit_id = ?", [result.audit_id])
    assert ("q1", "shortcut") in {(r["qid"], r["validator"]) for r in flags}
    summary = {r["validator"]: r for r in store.query(
        "SELECT * FROM audit_validator_summary WHERE audit_id = ?", [result.audit_id])}
    assert summary["shortcut"]["flagged"] == result.summary["per_validator"]["shortcut"]["flagged"]
    run = store.query("SELECT questions, flagged FROM audit_runs WHERE audit_id = ?", [result.audit_id])
    assert run == [{"questions": 5, "flagged": result.summary["overall"]["flagged"]}]
    # a rerun into the same folder reuses store and index; another corpus there is refused
    again = run_audit(root, tmp_path / "out", _settings(), lang="en", dense="none")
    untimed = lambda s: {k: {f: v for f, v in row.items() if f != "mean_s"} for k, row in s["per_validator"].items()}  # noqa: E731
    assert untimed(again.summary) == untimed(result.summary)
    assert again.summary["index"]["path"] == result.summary["index"]["path"]
    other = write_folder(tmp_path / "other", extra_passages=[("x_0", "x", "X", "An extra passage.")])
    with pytest.raises(Exception, match="another corpus"):
        run_audit(other, tmp_path / "out", _settings(), lang="en", dense="none")


def test_llm_validators_with_a_scripted_model(tmp_path):
    root = write_folder(tmp_path / "bench")
    llm = FakeLLM(default=scripted_reader)
    result = run_audit(root, tmp_path / "out", _settings(), lang="en", dense="none", llm=llm)
    items = _by_id(result)
    assert _status(items["q1"], "closed_book")[1].reason == "closed_book_solved"
    assert _status(items["q2"], "closed_book")[0] == "pass"
    assert _status(items["q2"], "solvability")[0] == "pass"
    status, verdict = _status(items["q5"], "necessity")
    assert (status, verdict.figures["decorative"]) == ("flag", ["d4_0"])
    assert _status(items["q2"], "necessity")[0] == "pass"
    # q4's judged passage is missing: the reader cannot answer from what is judged
    assert _status(items["q4"], "solvability")[1].reason == "not_solvable"
    assert _status(items["q3"], "closed_book")[1].reason == "no_answer"
    assert _status(items["q1"], "agent_run")[1].reason == "not_requested"
    assert result.summary["per_validator"]["closed_book"]["ran"] == 4


def test_selection_and_stop_at_first_flag(tmp_path):
    root = write_folder(tmp_path / "bench")
    result = run_audit(root, tmp_path / "out", _settings(stop_at_first_flag=True), lang="en", dense="none",
                       validators=["schema", "shortcut", "leakage"])
    items = _by_id(result)
    assert _status(items["q1"], "closed_book")[1].reason == "not_selected"
    status, verdict = _status(items["q4"], "shortcut")
    assert (status, verdict.reason) == ("skip", "after_flag") and "schema flagged" in verdict.feedback
    with pytest.raises(Exception, match="unknown validator"):
        run_audit(root, tmp_path / "out2", _settings(), lang="en", dense="none", validators=["shortcutt"])


def test_agent_without_llm_says_why(tmp_path):
    root = write_folder(tmp_path / "bench")
    result = run_audit(root, tmp_path / "out", _settings(), lang="en", dense="none", agent=True)
    assert {_status(i, "agent_run")[1].reason for i in result.questions} == {"no_llm"}


def test_the_folders_own_index_is_used_when_it_matches_its_corpus(tmp_path):
    from factory.index.fixed import build_index_from_chunks

    from audit_folder import PASSAGES

    root = write_folder(tmp_path / "bench")
    rows = [{"chunk_id": c, "title": t, "text": x} for c, _, t, x in PASSAGES]
    build_index_from_chunks(rows, root / "index", "en", dense=None, progress=False)
    result = run_audit(root, tmp_path / "out", _settings(), lang="en", validators=["shortcut"])
    assert result.summary["index"]["reused_from_benchmark"] and result.summary["index"]["path"] == str(root / "index")
    assert any("no dense vectors" in note for note in result.summary["notes"])
    assert not (tmp_path / "out" / "index").exists()

    # a corpus changed after the index was built: the index is not trusted, one is built
    lines = (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace("salt warehouses", "salt sheds")
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    again = run_audit(root, tmp_path / "out2", _settings(), lang="en", dense="none", validators=["shortcut"])
    assert not again.summary["index"]["reused_from_benchmark"]
    assert any("index/ was not used" in note and "changed" in note for note in again.summary["notes"])


def test_agent_run_when_asked(tmp_path):
    """The search agent runs as difficulty checker: its verdict carries its figures, its episodes land in the store."""
    from factory.store import Store

    root = write_folder(tmp_path / "bench")
    settings = Settings(validation={"shortcut_k": 2, "shortcut_searchers": ["bm25"]},
                        agent={"difficulty_rollouts": 1, "max_rounds": 1})
    result = run_audit(root, tmp_path / "out", settings, lang="en", dense="none", agent=True,
                       llm=FakeLLM(default="I would rather not search."), validators=["agent_run"], limit=2)
    for item in result.questions:
        status, verdict = _status(item, "agent_run")
        assert status in ("pass", "flag", "error") and verdict.figures["rollouts"] == 1, verdict
    episodes = Store(tmp_path / "out" / "store").query("SELECT item_id FROM agent_episodes ORDER BY item_id")
    assert [e["item_id"] for e in episodes] == ["q1", "q2"]
