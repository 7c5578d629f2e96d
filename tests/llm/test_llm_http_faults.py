"""The openai backend over real HTTP against a misbehaving local server."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import BaseModel

from factory.llm import Gateway, LLMRequest, ToolSpec, make_llm
from factory.llm.fake_server import FakeOpenAIServer, Faults
from factory.llm.local_server import free_port


class City(BaseModel):
    city: str
    country: str


def ask(i: int) -> LLMRequest:
    return LLMRequest.chat("Answer in JSON.", f"question number {i}", output=City)


def test_every_request_ends_with_a_recorded_outcome_under_injected_faults(store) -> None:
    faults = Faults(timeout=0.1, http_500=0.1, http_429=0.1, broken_body=0.05, broken_answer=0.3, hang_s=1.5)
    with FakeOpenAIServer(faults=faults, seed=5) as server:
        backend = make_llm(f"openai:{server.url}#fake-http?timeout=0.5&retries=2")
        gateway = Gateway(backend, store, stage_default="faults", concurrency=8)
        requests = [ask(i) for i in range(30)]
        start = time.monotonic()
        answers = gateway.complete_many(requests)
        elapsed = time.monotonic() - start
        outcomes = server.outcomes()
    keys = {r.key(backend.model) for r in requests}
    rows = store.query("SELECT request_key, ok, error, parse_error, attempts, repaired FROM llm_calls")
    assert {r["request_key"] for r in rows} == keys and len(rows) == 30  # one outcome row per request
    assert all(r["ok"] or r["error"] or r["parse_error"] for r in rows)
    assert all((a.ok and a.parsed is not None) or a.error or a.parse_error for a in answers)
    # the faults really happened, were retried, and some were repaired
    assert {"timeout", "http_500", "http_429", "broken_answer", "ok"} <= set(outcomes)
    assert sum(outcomes.values()) > 30
    assert sum(r["ok"] for r in rows) >= 15
    assert any(r["repaired"] for r in rows)
    assert elapsed < 60


@pytest.mark.parametrize(
    ("faults", "message", "requests_seen"),
    [
        (Faults(http_500=1.0), "HTTP 500", 3),
        (Faults(http_429=1.0), "HTTP 429", 3),
        (Faults(timeout=1.0, hang_s=1.0), "APITimeoutError", 3),
        (Faults(broken_body=1.0), "JSONDecodeError", 3),
    ],
)
def test_each_fault_is_retried_then_recorded(store, faults: Faults, message: str, requests_seen: int) -> None:
    with FakeOpenAIServer(faults=faults) as server:
        gateway = Gateway(make_llm(f"openai:{server.url}#fake-http?timeout=0.3&retries=2"), store)
        answer = gateway.complete(ask(1), stage="s", item_id="x")
        seen = len(server.log)
    assert message in (answer.error or "")
    assert seen == requests_seen  # one try plus two retries
    row = store.query("SELECT ok, error FROM llm_calls")[0]
    assert row["ok"] is False and message in row["error"]


def test_refused_connection_is_a_recorded_error(store) -> None:
    port = free_port()  # nothing listens there
    gateway = Gateway(make_llm(f"openai:http://127.0.0.1:{port}/v1#m?retries=1&timeout=1"), store)
    answer = gateway.complete(ask(1))
    assert answer.error and "APIConnectionError" in answer.error
    assert store.scalar("SELECT count(*) FROM llm_calls WHERE error LIKE '%APIConnectionError%'") == 1


def test_structured_request_reaches_the_server_in_the_chosen_layout(store) -> None:
    bodies: list[dict] = []

    def answer(body: dict) -> str:
        bodies.append(body)
        return '{"city": "Paris", "country": "France"}'

    with FakeOpenAIServer(answer=answer) as server:
        for spec in (f"openai:{server.url}#m", f"openai+llamacpp:{server.url}#m"):
            response = Gateway(make_llm(spec), None).complete(ask(1))
            assert response.ok and response.parsed == {"city": "Paris", "country": "France"}
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert bodies[0]["response_format"]["json_schema"]["schema"] == City.model_json_schema()
    assert bodies[1]["response_format"] == {"type": "json_object", "schema": City.model_json_schema()}
    assert bodies[0]["seed"] == ask(1).effective_seed()


def test_tool_calls_come_back_parsed(store) -> None:
    def answer(body: dict) -> dict:
        assert body["tools"][0]["function"]["name"] == "search_corpus"
        call = {"id": "call_7", "type": "function",
                "function": {"name": "search_corpus", "arguments": json.dumps({"query": "river delta"})}}
        return {"content": None, "tool_calls": [call]}

    request = LLMRequest.chat(
        None, "find it",
        tools=[ToolSpec(name="search_corpus", description="search the corpus",
                        parameters={"type": "object", "properties": {"query": {"type": "string"}}})],
        tool_choice="auto",
    )
    with FakeOpenAIServer(answer=answer) as server:
        response = Gateway(make_llm(f"openai:{server.url}#m"), store).complete(request)
    assert response.ok and response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("call_7", "search_corpus", {"query": "river delta"})
    ]


def test_several_urls_share_the_load() -> None:
    with FakeOpenAIServer() as one, FakeOpenAIServer() as two:
        gateway = Gateway(make_llm(f"openai:{one.url},{two.url}#fake-http"), None, concurrency=2)
        answers = gateway.complete_many([ask(i) for i in range(6)])
        assert all(a.ok for a in answers)
        assert (len(one.log), len(two.log)) == (3, 3)


def test_context_size_is_read_from_the_server() -> None:
    with FakeOpenAIServer(model="fake-http") as server:
        assert make_llm(f"openai:{server.url}#fake-http").context_tokens == 4096
