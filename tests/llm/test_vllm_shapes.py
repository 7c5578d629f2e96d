"""vLLM's request shapes (structured output, tools and tool_choice), checked against the fake server,
which refuses what vLLM refuses."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

from factory.llm import Gateway, LLMRequest, LLMResponse, ToolCall, ToolSpec, make_llm
from factory.llm.fake import FakeLLM
from factory.llm.fake_server import FakeOpenAIServer, llm_answer


class City(BaseModel):
    city: str


SEARCH = ToolSpec(name="search_corpus", description="search the corpus",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
FINAL = ToolSpec(name="finalize_ranking", description="end with a ranking",
                 parameters={"type": "object", "properties": {"ranking": {"type": "array"}}})


def tools_request(choice: str | None) -> LLMRequest:
    return LLMRequest.chat(None, "find the river", tools=[SEARCH, FINAL], tool_choice=choice)


def test_structured_output_goes_as_response_format_json_schema_with_name_and_schema() -> None:
    with FakeOpenAIServer() as server:
        answer = Gateway(make_llm(f"openai:{server.url}#m"), None).complete(
            LLMRequest.chat(None, "capital of France?", output=City))
        shape = server.log[0]["shape"]
    assert answer.ok and answer.parsed == {"city": "fake city"}
    assert (shape["response_format"], shape["schema_name"]) == ("json_schema", "City")


@pytest.mark.parametrize(("choice", "sent"), [
    ("auto", "auto"), ("required", "required"), ("none", "none"),
    ("finalize_ranking", {"type": "function", "function": {"name": "finalize_ranking"}}),
])
def test_tool_choice_takes_vllms_four_forms(choice: str, sent: object) -> None:
    with FakeOpenAIServer() as server:
        answer = Gateway(make_llm(f"openai:{server.url}#m"), None).complete(tools_request(choice))
        shape = server.log[0]["shape"]
    assert answer.error is None
    assert shape["tools"] == ["search_corpus", "finalize_ranking"] and shape["tool_choice"] == sent


def test_auto_tool_choice_on_a_server_without_it_is_a_recorded_refusal_not_retried(store) -> None:
    with FakeOpenAIServer(auto_tool_choice=False) as server:
        answer = Gateway(make_llm(f"openai:{server.url}#m?retries=2"), store).complete(tools_request("auto"))
        outcomes = server.outcomes()
    assert answer.error and "HTTP 400" in answer.error and "enable-auto-tool-choice" in answer.error
    assert outcomes == {"bad_request": 1}  # a 400 is the request's fault: asking again cannot help
    assert store.scalar("SELECT count(*) FROM llm_calls WHERE error LIKE 'HTTP 400%'") == 1


def test_parallel_tool_calls_come_back_in_order_with_their_ids() -> None:
    calls = [ToolCall(id="call_a", name="search_corpus", arguments=json.dumps({"query": "river delta"})),
             ToolCall(id="call_b", name="search_corpus", arguments=json.dumps({"query": "delta town"}))]
    llm = FakeLLM(default=LLMResponse(tool_calls=calls, finish_reason="tool_calls"))
    with FakeOpenAIServer(llm_answer(llm)) as server:
        answer = Gateway(make_llm(f"openai:{server.url}#m"), None).complete(tools_request("auto"))
    assert answer.ok and answer.finish_reason == "tool_calls"
    assert [(c.id, c.parsed_arguments()["query"]) for c in answer.tool_calls] == [
        ("call_a", "river delta"), ("call_b", "delta town")]
    assert llm.requests[0].tool_choice == "auto" and [t.name for t in llm.requests[0].tools] == [
        "search_corpus", "finalize_ranking"]


@pytest.mark.parametrize(("body", "says"), [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "json_schema.schema"),
    ({"response_format": {"type": "grammar"}}, "response_format.type"),
    ({"tools": [{"name": "search_corpus"}]}, "each tool"),
    ({"tools": [{"type": "function", "function": SEARCH.model_dump()}],
      "tool_choice": {"type": "function", "function": {"name": "other"}}}, "not among the tools"),
    ({"chat_template_kwargs": "enable_thinking=false"}, "chat_template_kwargs"),
])
def test_the_fake_server_refuses_what_vllm_refuses(body: dict, says: str) -> None:
    with FakeOpenAIServer() as server:
        reply = httpx.post(f"{server.url}/chat/completions",
                           json={"model": "m", "messages": [{"role": "user", "content": "q"}], **body})
    assert reply.status_code == 400 and says in reply.json()["error"]["message"]


def test_the_server_command_keeps_serving_in_the_background_until_told_to_stop() -> None:
    """Started as a user starts it (``... &``, no stdin), it serves until SIGTERM; a parent
    that pipes its stdin can ask for it to go with the pipe (``--until-stdin-closes``)."""
    import subprocess
    import sys
    import time

    command = [sys.executable, "-m", "factory.llm.fake_server", "--answers", "schema", "--capacity", "0"]
    background = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        url = json.loads(background.stdout.readline())["url"]
        time.sleep(0.5)  # a server tied to its closed stdin would be gone by now
        assert background.poll() is None
        assert httpx.get(f"{url}/models", timeout=5).status_code == 200
    finally:
        background.terminate()
    assert background.wait(timeout=10) == 0

    piped = subprocess.Popen([*command, "--until-stdin-closes"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    json.loads(piped.stdout.readline())
    piped.stdin.close()
    assert piped.wait(timeout=10) == 0
