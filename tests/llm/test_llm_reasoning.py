"""Reasoning models: the thinking switch, thinking kept apart and counted, truncation recorded."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from factory.llm import Gateway, LLMRequest, Sampling, make_llm
from factory.llm.fake_server import FakeOpenAIServer
from factory.llm.fake_vllm import Thinking
from factory.llm.thinking import split_thinking
from factory.settings import LLMSettings


class City(BaseModel):
    city: str
    country: str


PARIS = '{"city": "Paris", "country": "France"}'


def structured(max_tokens: int = 200) -> LLMRequest:
    return LLMRequest.chat("Answer in JSON.", "Which city is the capital of France?", output=City,
                           sampling=Sampling(max_tokens=max_tokens))


@pytest.mark.parametrize(("text", "thinking", "answer"), [
    ("<think>\nfirst France, then its capital\n</think>\n\n" + PARIS, "first France, then its capital", PARIS),
    ("  <think>cut off while thinki", "cut off while thinki", ""),  # the budget ran out while thinking
    ("the template opened the block</think>" + PARIS, "the template opened the block", PARIS),
    (PARIS, "", PARIS),
])
def test_inline_thinking_is_split_from_the_answer(text: str, thinking: str, answer: str) -> None:
    assert split_thinking(text) == (thinking, answer)


def test_structured_calls_go_out_with_thinking_off_and_others_think(store) -> None:
    thinking = Thinking("reasoning_content", tokens=120)
    with FakeOpenAIServer(lambda body: PARIS, thinking=thinking) as server:
        gateway = Gateway(make_llm(f"openai:{server.url}#qwen3"), store)
        answer = gateway.complete(structured(), stage="closed_book")
        chat = gateway.complete(LLMRequest.chat(None, "Say hello.", sampling=Sampling(max_tokens=400)), stage="chat")
        shapes = [entry["shape"] for entry in server.log]
    assert shapes[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert shapes[1]["chat_template_kwargs"] is None
    assert answer.ok and answer.parsed == {"city": "Paris", "country": "France"}
    assert (answer.thinking_tokens, answer.reasoning) == (0, "")
    assert chat.ok and chat.text == PARIS and chat.reasoning.startswith("Let me check")
    assert chat.thinking_tokens == 120 and chat.tokens_out > 120  # the server's own figure, part of tokens_out
    usage = {r["stage"]: r for r in store.query("SELECT stage, thinking_tokens, truncated FROM llm_usage")}
    assert usage["chat"]["thinking_tokens"] == 120 and usage["closed_book"]["thinking_tokens"] == 0


def test_thinking_that_eats_the_budget_is_a_recorded_truncation_not_a_parse_error(store) -> None:
    thinking = Thinking("reasoning_content", tokens=900)
    with FakeOpenAIServer(lambda body: PARIS, thinking=thinking) as server:
        backend = make_llm(f"openai:{server.url}#qwen3", LLMSettings(disable_thinking="never"))
        answer = Gateway(backend, store).complete(structured(max_tokens=100), stage="solvability", item_id="d1")
        requests = len(server.log)
    assert not answer.ok and answer.parse_error is None and answer.parsed is None
    assert answer.truncated.startswith("cut off at max_tokens=100: 100 tokens written, 100 of them thinking, "
                                       "nothing left for the answer")
    assert answer.problem.startswith("truncated: cut off")
    assert requests == 1  # no repair request: the same budget would be eaten again
    row = store.query("SELECT ok, parse_error, truncated, thinking_tokens, max_tokens, tokens_out, attempts "
                      "FROM llm_calls")[0]
    assert row["ok"] is False and row["parse_error"] is None and row["truncated"] == answer.truncated
    assert (row["thinking_tokens"], row["max_tokens"], row["tokens_out"], row["attempts"]) == (100, 100, 100, 1)
    usage = store.query("SELECT parse_errors, truncated, errors FROM llm_usage")[0]
    assert usage == {"parse_errors": 0, "truncated": 1, "errors": 0}


def test_an_inline_think_block_is_stripped_before_parsing_and_estimated_when_not_reported(store) -> None:
    thinking = Thinking("inline", tokens=60, report_tokens=False)
    with FakeOpenAIServer(lambda body: PARIS, thinking=thinking) as server:
        backend = make_llm(f"openai:{server.url}#qwen3", LLMSettings(disable_thinking="never"))
        answer = Gateway(backend, store).complete(structured())
    assert answer.ok and answer.parsed == {"city": "Paris", "country": "France"}
    assert answer.text == PARIS and answer.reasoning.startswith("Let me check")
    assert answer.thinking_tokens == 60  # characters / 4 of the thinking: the server did not say


def test_an_answer_cut_off_after_thinking_is_truncated_with_both_figures(store) -> None:
    thinking = Thinking("inline", tokens=40)
    with FakeOpenAIServer(lambda body: PARIS, thinking=thinking) as server:
        backend = make_llm(f"openai:{server.url}#qwen3", LLMSettings(disable_thinking="never"))
        answer = Gateway(backend, store).complete(structured(max_tokens=45))
    assert answer.truncated is not None and answer.finish_reason == "length"
    assert "45 tokens written, 40 of them thinking" in answer.truncated and "invalid JSON" in answer.truncated


def test_the_thinking_switch_is_part_of_the_cache_key() -> None:
    with FakeOpenAIServer(lambda body: PARIS) as server:
        keys = {mode: Gateway(make_llm(f"openai:{server.url}#m", LLMSettings(disable_thinking=mode)), None)
                .key(structured()) for mode in ("structured", "all", "never")}
    assert len(set(keys.values())) == 3
    assert keys["structured"] == structured().key("m")  # the default keeps the keys stores already hold


def test_a_plain_server_is_not_sent_the_switch() -> None:
    with FakeOpenAIServer(lambda body: PARIS) as server:
        Gateway(make_llm(f"openai+plain:{server.url}#m"), None).complete(structured())
        assert server.log[0]["shape"]["chat_template_kwargs"] is None
