"""The `fake:factory` model answers the factory's own prompts well enough to drive a build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.compose.composer import compose, revise
from factory.compose.facts import build_fact_sheet
from factory.llm.registry import make_llm
from factory.llm.types import LLMRequest
from factory.records import Cell, Subgraph, Verdict
from factory.settings import ValidateSettings
from factory.taxonomy import load_taxonomy
from factory.validate.base import DictChunks, ValidationContext
from factory.validate.closed_book import ClosedBookValidator
from factory.validate.llm_checks import solve_with

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = {
    # lang: (start doc, answer doc, bridge entity, answer entity)
    "en": ("en_place_001", "en_person_007", "Ashkel Valley Ironworks", "Edmund Carrow"),
    "ru": ("ru_zavod_zsz", "ru_zhd_zol", "Заречинский сталелитейный завод", "Заречинско-Ольшанская железная дорога"),
}


def _docs(lang: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_fake_composes_solves_and_revises(lang: str) -> None:
    start, end, bridge, answer = CASES[lang]
    docs = _docs(lang)
    texts = {f"{start}_0": docs[start]["text"], f"{end}_0": docs[end]["text"]}
    subgraph = Subgraph(
        cell=Cell.parse("chain/direct/person"), lang=lang, chunk_ids=list(texts), answer_entity="e_answer",
        bridge_entities=["e_bridge"], roles={f"{start}_0": "start", f"{end}_0": "answer"},
        figures={"entities": {"e_answer": {"name": answer}, "e_bridge": {"name": bridge}}},
    )
    llm = make_llm("fake:factory")
    sheet = build_fact_sheet(subgraph, texts, llm, lang, "c0")
    assert {f.chunk_id for f in sheet.facts} == set(texts)
    assert all(f.statement in texts[f.chunk_id] for f in sheet.facts)

    spec = load_taxonomy().spec(subgraph.cell, lang)
    draft = compose(sheet, spec, llm, lang, "c0")
    assert draft.parse_error is None and draft.answer == answer
    assert draft.answer_chunk_id == f"{end}_0"
    folded = draft.question.casefold()
    for word in (bridge + " " + answer).split():
        if len(word) > 3:
            assert word.casefold() not in folded

    ctx = ValidationContext(settings=ValidateSettings(), chunks=DictChunks(texts), llm=llm)
    assert solve_with(list(texts), draft, ctx, samples=2, stage="solvability").solved == 2
    for left_out in texts:  # every chunk is needed: leaving one out makes it unsolvable
        rest = [c for c in texts if c != left_out]
        assert solve_with(rest, draft, ctx, samples=1, stage="necessity").solved == 0
    assert ClosedBookValidator().check(draft, ctx).ok

    quoted = draft.question.split("«" if lang == "ru" else '"')[1].split("»" if lang == "ru" else '"')[0]
    feedback = Verdict(ok=False, validator="shortcut", reason="support_in_top_k",
                       feedback=f'The words that lead there: "{quoted}". Replace them.')
    revised = revise([(draft, [feedback])], sheet, spec, llm, lang)
    assert revised.attempt == 1 and revised.question != draft.question
    assert quoted not in revised.question.casefold()
    assert solve_with(list(texts), revised, ctx, samples=1, stage="solvability").solved == 1


def test_other_requests_fall_back_to_schema_instances() -> None:
    llm = make_llm("fake:factory")
    response = llm.complete(LLMRequest.chat(None, "hello", output_schema={
        "type": "object", "properties": {"x": {"type": "integer"}}}, schema_name="Other"))
    assert response.parsed == {"x": 0}
    assert llm.model == "fake-factory" and make_llm("fake").model != llm.model


def test_answers_fit_the_schema_limits() -> None:
    from factory.compose.facts import FACT_CHARS, facts_model

    long_sentence = "Vellmoor " + "grew and grew " * 80 + "until 1900."
    texts = {"a_0": long_sentence + " Edmund Carrow opened the works.", "b_0": "Dunmere lies on Lake Tessaly."}
    subgraph = Subgraph(cell=Cell.parse("chain/direct/person"), lang="en", chunk_ids=list(texts),
                        figures={"entities": {}})
    sheet = build_fact_sheet(subgraph, texts, make_llm("fake:factory"), "en", "c1")
    assert all(len(f.statement) <= FACT_CHARS for f in sheet.facts)
    assert {f.chunk_id for f in sheet.facts} == set(texts)
    assert facts_model(2)  # the schema the answer was checked against


def test_offered_tools_the_fake_agent_searches_then_finalizes_by_tool_calls() -> None:
    from factory.llm.types import Message, ToolSpec

    llm = make_llm("fake:factory")
    tools = [ToolSpec(name=n, description=n, parameters={"type": "object"})
             for n in ("search_corpus", "save_and_advance", "finalize_ranking")]
    start = [Message(role="system", content="You search."), Message(role="user", content="Question: Which river?")]
    first = llm.complete(LLMRequest(messages=start, tools=tools, tool_choice="auto"))
    assert [(c.name, c.parsed_arguments()) for c in first.tool_calls] == [("search_corpus", {"query": "Which river?"})]
    results = Message(role="tool", tool_call_id=first.tool_calls[0].id, name="search_corpus",
                      content="[1] chunk_id: d1_0\nsome text\n\n[2] chunk_id: d2_0\nmore text")
    second = llm.complete(LLMRequest(messages=[*start, Message(role="assistant", tool_calls=first.tool_calls), results],
                                     tools=tools, tool_choice="auto"))
    call = second.tool_calls[0]
    assert call.name == "finalize_ranking"
    assert [r["chunk_id"] for r in call.parsed_arguments()["ranking"]] == ["d1_0", "d2_0"]
