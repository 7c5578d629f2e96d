"""Spec strings, the registry, and the fake backend's schema answers."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from factory.llm import LLMRequest, LLMSpecError, make_llm, parse_spec
from factory.llm.fake import example_from_schema
from factory.llm.openai_backend import OpenAIBackend, OpenAIBackendError
from factory.llm.types import Message, ToolCall, ToolSpec
from factory.settings import LLMSettings


def test_openai_spec_with_several_urls_flavor_and_options() -> None:
    spec = parse_spec("openai+llamacpp:http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1/#Qwen/Qwen3-8B?timeout=5&retries=1")
    assert spec.backend == "openai"
    assert spec.flavor == "llamacpp"
    assert spec.urls == ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]
    assert spec.model == "Qwen/Qwen3-8B"
    assert spec.options == {"timeout": "5", "retries": "1"}
    assert spec.redacted() == "openai+llamacpp#Qwen/Qwen3-8B"


def test_llamacpp_and_fake_specs() -> None:
    assert parse_spec("llamacpp:smollm2-135m").target == "smollm2-135m"
    path_spec = parse_spec("llamacpp:/models/m.gguf?threads=1")
    assert (path_spec.target, path_spec.options) == ("/models/m.gguf", {"threads": "1"})
    fake = parse_spec("fake?delay=0.5")
    assert (fake.backend, fake.target, fake.options) == ("fake", "", {"delay": "0.5"})


@pytest.mark.parametrize("text", ["", "   ", "no such:x", "fake?colour=red"])
def test_bad_specs_are_user_errors(text: str) -> None:
    with pytest.raises(LLMSpecError):
        parse_spec(text)


def test_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(LLMSpecError, match="known: fake, llamacpp, openai"):
        make_llm("vllmdirect:x")


def test_openai_spec_needs_model_and_known_flavor() -> None:
    with pytest.raises(OpenAIBackendError, match="model name after '#'"):
        make_llm("openai:http://127.0.0.1:1/v1")
    with pytest.raises(OpenAIBackendError, match="unknown flavor"):
        make_llm("openai+tgi:http://127.0.0.1:1/v1#m")


class Step(BaseModel):
    tool: Literal["search", "finish"]
    query: str


class Plan(BaseModel):
    steps: list[Step]
    budget: int
    note: str | None = None


def test_fake_spec_answers_any_pydantic_schema_validly() -> None:
    llm = make_llm("fake")
    answer = llm.complete(LLMRequest.chat("sys", "plan it", output=Plan))
    assert answer.ok, answer
    plan = Plan.model_validate(answer.parsed)
    assert plan.steps[0].tool == "search"
    text = llm.complete(LLMRequest.chat(None, "hello   there"))
    assert text.text == "fake answer to: hello there"


def test_example_from_schema_respects_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "minLength": 20},
            "ids": {"type": "array", "items": {"type": "integer", "minimum": 3}, "minItems": 2},
        },
    }
    value = example_from_schema(schema)
    assert len(value["reason"]) >= 20
    assert value["ids"] == [3, 3]


def _backend(structured: str) -> OpenAIBackend:
    return OpenAIBackend(["http://127.0.0.1:1/v1"], "m", structured=structured, max_retries=0)


def test_openai_request_layout_for_vllm_and_llamacpp_servers() -> None:
    request = LLMRequest.chat("sys", "q", output=Step, seed=3, sample_index=2)
    vllm = _backend("json_schema").request_body(request)
    assert vllm["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Step", "schema": Step.model_json_schema()},
    }
    assert vllm["seed"] == request.effective_seed() != LLMRequest.chat("sys", "q", seed=3).effective_seed()
    llama = _backend("json_object").request_body(request)
    assert llama["response_format"] == {"type": "json_object", "schema": Step.model_json_schema()}
    assert "response_format" not in _backend("none").request_body(request)


def test_openai_tools_layout_round_trips_tool_calls() -> None:
    request = LLMRequest(
        messages=[
            Message(role="user", content="find it"),
            Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="search_corpus", arguments='{"query": "x"}')]),
            Message(role="tool", content="results...", tool_call_id="c1", name="search_corpus"),
        ],
        tools=[ToolSpec(name="search_corpus", description="search", parameters={"type": "object", "properties": {}})],
        tool_choice="search_corpus",
    )
    kwargs = _backend("json_schema").request_body(request)
    assert kwargs["tools"][0] == {
        "type": "function",
        "function": {"name": "search_corpus", "description": "search", "parameters": {"type": "object", "properties": {}}},
    }
    assert kwargs["tool_choice"] == {"type": "function", "function": {"name": "search_corpus"}}
    assistant, tool = kwargs["messages"][1], kwargs["messages"][2]
    assert assistant["tool_calls"][0]["function"] == {"name": "search_corpus", "arguments": '{"query": "x"}'}
    assert assistant["content"] is None
    assert tool == {"role": "tool", "content": "results...", "tool_call_id": "c1"}


def test_settings_feed_the_backend() -> None:
    backend = make_llm("openai:http://127.0.0.1:1/v1#m?context=1234", LLMSettings(max_retries=0))
    assert backend.context_tokens == 1234
    assert backend.structured == "json_schema"


def test_llamacpp_flattens_tool_turns_for_small_chat_templates() -> None:
    from factory.llm.llamacpp_backend import _plain_message

    call = Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="search_corpus", arguments='{"q": 1}')])
    assert _plain_message(call) == {"role": "assistant", "content": '[{"tool": "search_corpus", "arguments": "{\\"q\\": 1}"}]'}
    result = Message(role="tool", content="3 results", tool_call_id="c1", name="search_corpus")
    assert _plain_message(result) == {"role": "user", "content": "Tool result search_corpus:\n3 results"}


def test_unknown_embedded_name_is_a_clear_error() -> None:
    from factory.llm.llamacpp_backend import LlamaCppError

    with pytest.raises(LlamaCppError, match="neither an embedded model"):
        make_llm("llamacpp:qwen-7b")


def test_an_english_only_embedded_model_is_refused_for_russian_before_any_work() -> None:
    from factory.llm.registry import require_language

    with pytest.raises(LLMSpecError, match=r"reads en only.*--llm openai:.*fake:factory"):
        require_language("llamacpp:smollm2-135m", "ru")
    require_language("llamacpp:smollm2-135m", "en")
    require_language("openai:http://127.0.0.1:8000/v1#qwen3-8b", "ru")  # servers are taken at their word
    require_language("fake:factory", "ru")


def test_build_benchmark_refuses_russian_with_the_embedded_model(tmp_path) -> None:
    from typer.testing import CliRunner

    from factory.cli import app

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "Текст."}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["build-benchmark", "--lang", "ru", "--corpus", str(corpus), "--n", "1",
                                      "--llm", "llamacpp:smollm2-135m", "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert "reads en only" in (result.output + str(result.exception))
    assert not (tmp_path / "out").exists()  # nothing was started


def test_the_body_sent_is_what_the_sdk_would_send() -> None:
    """The backend posts its body as it is; the SDK's ``create`` would first pass it through
    its typed parameters. For every request shape the factory makes, that changes nothing."""
    from openai._utils import maybe_transform
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    history = [
        Message(role="system", content="sys"),
        Message(role="user", content="find it"),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="search_corpus", arguments='{"q": "x"}'),
                                                          ToolCall(id="c2", name="read_chunk", arguments='{"id": "a"}')]),
        Message(role="tool", content="results...", tool_call_id="c1", name="search_corpus"),
        Message(role="tool", content="text", tool_call_id="c2", name="read_chunk"),
    ]
    tools = [ToolSpec(name="search_corpus", description="search", parameters={"type": "object", "properties": {}})]
    requests = [
        LLMRequest.chat("sys", "q", output=Step, seed=3, sample_index=2),
        LLMRequest(messages=history, tools=tools, tool_choice="required"),
        LLMRequest(messages=history[:2], tools=tools, tool_choice="search_corpus"),
        LLMRequest.chat("sys", "q"),
    ]
    requests[-1].sampling.stop = ["\n\n"]
    for structured in ("json_schema", "json_object", "none"):
        backend = _backend(structured)
        for request in requests:
            body = backend.request_body(request)
            assert maybe_transform(body, CompletionCreateParamsNonStreaming) == body
    assert _backend("json_schema").request_body(requests[0])["chat_template_kwargs"] == {"enable_thinking": False}
