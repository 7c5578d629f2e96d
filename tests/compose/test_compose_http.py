"""Russian composer prompts over real HTTP: a local llama.cpp server behind the openai backend (slow).

The embedded model cannot write Russian; this proves the path (prompt files, schema,
transport, logging, parse handling), not the quality.
"""

from __future__ import annotations

import json

import pytest

from factory.compose.composer import compose, revise
from factory.llm.gateway import Gateway
from factory.llm.llamacpp_backend import SMOLLM2
from factory.llm.local_server import llamacpp_server
from factory.llm.registry import make_llm
from factory.records import Cell, Fact, FactSheet, Subgraph, Verdict
from factory.settings import LLMSettings
from factory.taxonomy import load_taxonomy


def _sheet() -> FactSheet:
    sub = Subgraph(
        cell=Cell.parse("temporal/direct/place"), lang="ru", chunk_ids=["peter_0", "spb_0"],
        answer_entity="петроград", bridge_entities=["санкт-петербург"], constraint_entities=["пётр i"],
        roles={"peter_0": "start", "spb_0": "answer"},
        figures={"entities": {
            "петроград": {"name": "Петроград", "label": "location", "aliases": []},
            "санкт-петербург": {"name": "Санкт-Петербург", "label": "location", "aliases": []},
            "пётр i": {"name": "Пётр I", "label": "person", "aliases": []},
        }, "dates": {"peter_0": ["1703 году"], "spb_0": ["1914 году"]}},
    )
    return FactSheet(subgraph=sub, facts=[
        Fact(chunk_id="peter_0", statement="Пётр I основал Санкт-Петербург в 1703 году.",
             paraphrase="Город на Неве заложил Пётр I в 1703 году."),
        Fact(chunk_id="spb_0", statement="В 1914 году город переименовали в Петроград.",
             paraphrase="С 1914 года город носил имя Петроград."),
    ], passages={"peter_0": "Пётр I основал Санкт-Петербург в 1703 году.",
                 "spb_0": "В 1914 году город переименовали в Петроград."})


@pytest.mark.slow
def test_russian_compose_and_revise_over_http(store):
    sheet = _sheet()
    spec = load_taxonomy().spec(sheet.subgraph.cell)
    with llamacpp_server(SMOLLM2.path(), alias="smollm2-135m", threads=1, context_tokens=8192) as url:
        backend = make_llm(f"openai+llamacpp:{url}#smollm2-135m?retries=1", LLMSettings(timeout_s=300))
        gateway = Gateway(backend, store, stage_default="compose")
        draft = compose(sheet, spec, gateway, "ru", "http-ru", max_tokens=160)
        revised = revise([(draft, [Verdict(ok=False, validator="leakage", feedback="В вопросе названо «Петроград».")])],
                         sheet, spec, gateway, "ru", max_tokens=160)
    for one, attempt in ((draft, 0), (revised, 1)):
        assert one.lang == "ru" and one.attempt == attempt
        # a parsed draft, a decline (the schema's other branch, which the server's grammar allows) or
        # a recorded parse failure with the raw text: never an exception
        assert (one.parse_error is None and bool(one.question) != bool(one.declined)) or (
            one.parse_error and one.raw is not None)
        # 160 tokens cannot hold the steps: the cut-off answer is recorded as truncated, not as a wrong one
        assert one.parse_error is None or one.parse_error.startswith("truncated") or "JSON" in one.parse_error
    rows = store.query("SELECT stage, ok, backend, request FROM llm_calls ORDER BY _written_at")
    assert [r["stage"] for r in rows] == ["compose", "revise"]
    assert all(r["backend"] == "openai" for r in rows)
    sent = json.loads(rows[0]["request"]) if isinstance(rows[0]["request"], str) else rows[0]["request"]
    text = json.dumps(sent, ensure_ascii=False)
    assert "Тип вопроса" in text and "Скрыто" in text and "С 1914 года город носил имя Петроград" in text
