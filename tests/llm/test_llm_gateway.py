"""The gateway over the scripted fake: cache, keys, usage, repair, failures, concurrency."""

from __future__ import annotations

import json
import threading
import time

from pydantic import BaseModel

from factory.llm import Gateway, LLMRequest, LLMResponse, Sampling
from factory.llm.fake import FakeLLM


class Answer(BaseModel):
    answer: str
    confidence: float


def ask(text: str, **kwargs) -> LLMRequest:
    return LLMRequest.chat("You answer questions.", text, output=Answer, **kwargs)


GOOD = {"answer": "Paris", "confidence": 0.9}


def test_second_identical_call_is_a_cache_hit_and_spends_nothing(store) -> None:
    fake = FakeLLM(default=GOOD)
    gateway = Gateway(fake, store, stage_default="closed_book")
    first = gateway.complete(ask("capital of France?"), item_id="d1")
    second = gateway.complete(ask("capital of France?"), item_id="d1")
    assert fake.calls == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.parsed == first.parsed == GOOD
    assert second.tokens_in == first.tokens_in  # the record of the call, not new spending
    assert gateway.stats.total.calls == 1 and gateway.stats.total.cache_hits == 1
    assert store.scalar("SELECT count(*) FROM llm_calls") == 1
    usage = store.query("SELECT calls, tokens_in, tokens_out FROM llm_usage WHERE stage = 'closed_book'")
    assert usage == [{"calls": 1, "tokens_in": first.tokens_in, "tokens_out": first.tokens_out}]


def test_a_new_gateway_on_the_same_store_serves_recorded_answers(store) -> None:
    Gateway(FakeLLM(default=GOOD), store).complete(ask("q1"))
    rerun_fake = FakeLLM(default={"answer": "other", "confidence": 0.1})
    rerun = Gateway(rerun_fake, store)
    again = rerun.complete(ask("q1"))
    assert rerun_fake.calls == 0
    assert again.cached and again.parsed == GOOD


def test_sample_index_seed_model_and_sampling_change_the_key(store) -> None:
    fake = FakeLLM(default=GOOD)
    gateway = Gateway(fake, store)
    base = ask("q")
    variants = [
        base,
        ask("q", sample_index=1),
        ask("q", seed=7),
        ask("q", sampling=Sampling(temperature=0.7)),
        LLMRequest.chat("You answer questions.", "q"),  # no schema
    ]
    assert len({v.key(fake.model) for v in variants}) == len(variants)
    assert base.key("model-a") != base.key("model-b")
    for request in variants:
        gateway.complete(request)
    assert fake.calls == len(variants)
    assert store.scalar("SELECT count(DISTINCT request_key) FROM llm_calls") == len(variants)
    rows = store.query("SELECT sample_index FROM llm_calls ORDER BY sample_index DESC LIMIT 1")
    assert rows == [{"sample_index": 1}]


def test_usage_per_stage_and_item(store) -> None:
    gateway = Gateway(FakeLLM(default=GOOD), store)
    gateway.complete(ask("a"), stage="compose", item_id="d1")
    gateway.complete(ask("b"), stage="compose", item_id="d2")
    gateway.complete(ask("c"), stage="solvability", item_id="d1")
    gateway.complete(ask("a"), stage="compose", item_id="d1")  # cached: not logged, costs nothing
    per_stage = {r["stage"]: r for r in store.query("SELECT * FROM llm_usage")}
    assert per_stage["compose"]["calls"] == 2 and per_stage["solvability"]["calls"] == 1
    tokens = {r["request_key"]: r["tokens_in"] for r in store.query("SELECT request_key, tokens_in FROM llm_calls")}
    items = store.query("SELECT stage, item_id, calls, tokens_in FROM llm_usage_items ORDER BY stage, item_id")
    assert [(r["stage"], r["item_id"], r["calls"]) for r in items] == [
        ("compose", "d1", 1), ("compose", "d2", 1), ("solvability", "d1", 1)
    ]
    assert sum(r["tokens_in"] for r in items) == sum(tokens.values())
    bound = gateway.bound("agent", "t9")
    bound.complete(ask("z"))
    assert store.query("SELECT stage, item_id FROM llm_calls WHERE stage = 'agent'") == [{"stage": "agent", "item_id": "t9"}]


def test_malformed_answer_gets_one_repair_that_fixes_it(store) -> None:
    fake = FakeLLM(script=['{"answer": "Par', json.dumps(GOOD)])
    gateway = Gateway(fake, store)
    response = gateway.complete(ask("q"))
    assert response.ok and response.parsed == GOOD
    assert fake.calls == 2
    repair = fake.requests[1]
    assert repair.messages[-2].role == "assistant" and repair.messages[-2].content == '{"answer": "Par'
    assert "invalid JSON" in (repair.messages[-1].content or "")
    row = store.query("SELECT ok, attempts, repaired, parse_error, tokens_in FROM llm_calls")[0]
    assert row["ok"] and row["attempts"] == 2 and row["repaired"] and row["parse_error"] is None
    assert row["tokens_in"] == response.tokens_in > 0


def test_schema_violation_is_caught_even_when_json_parses(store) -> None:
    fake = FakeLLM(script=[{"answer": "Paris"}, {"answer": "Paris", "confidence": "high"}])
    response = Gateway(fake, store).complete(ask("q"))
    assert fake.calls == 2
    assert not response.ok and response.parsed is None
    assert "still unusable after one repair" in response.parse_error
    assert "confidence" in response.parse_error
    row = store.query("SELECT ok, error, parse_error, attempts, repaired, text FROM llm_calls")[0]
    assert row["ok"] is False and row["error"] is None and row["attempts"] == 2 and row["repaired"] is False
    assert json.loads(row["text"]) == {"answer": "Paris", "confidence": "high"}  # raw answer kept


def test_a_parse_failure_is_the_models_answer_and_is_cached(store) -> None:
    Gateway(FakeLLM(default="not json at all"), store).complete(ask("q"))
    rerun_fake = FakeLLM(default=GOOD)
    again = Gateway(rerun_fake, store).complete(ask("q"))
    assert rerun_fake.calls == 0 and again.parse_error and again.cached


def test_backend_exception_becomes_a_recorded_error_and_is_asked_again_on_rerun(store) -> None:
    def explode(request: LLMRequest) -> LLMResponse:
        raise ConnectionError("server went away")

    failing = FakeLLM(default=explode)
    response = Gateway(failing, store).complete(ask("q"), stage="compose", item_id="d1")
    assert response.error == "ConnectionError: server went away"
    assert not response.ok and failing.calls == 1  # no repair for a failed call
    rows = store.query("SELECT ok, error, stage, item_id FROM llm_calls")
    assert rows == [{"ok": False, "error": "ConnectionError: server went away", "stage": "compose", "item_id": "d1"}]
    assert store.query("SELECT * FROM llm_cache") == []
    healthy = FakeLLM(default=GOOD)
    rerun = Gateway(healthy, store).complete(ask("q"))
    assert healthy.calls == 1 and rerun.ok and not rerun.cached
    assert store.scalar("SELECT count(*) FROM llm_calls") == 2
    assert store.scalar("SELECT count(*) FROM llm_cache") == 1
    assert store.query("SELECT sum(errors) AS e, sum(ok) AS k FROM llm_usage") == [{"e": 1, "k": 1}]


def test_complete_many_keeps_order_and_bounds_in_flight_calls(store) -> None:
    in_flight, peak, lock = 0, 0, threading.Lock()

    def slow(request: LLMRequest) -> dict:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        question = request.messages[-1].content
        return {"answer": question, "confidence": 1.0}

    gateway = Gateway(FakeLLM(default=slow), store, concurrency=3)
    requests = [ask(f"question {i}") for i in range(12)]
    answers = gateway.complete_many(requests, stage="s", item_ids=[f"i{i}" for i in range(12)], concurrency=8)
    assert [a.parsed["answer"] for a in answers] == [f"question {i}" for i in range(12)]
    assert peak == 3  # the gateway's bound holds even with more worker threads
    assert store.scalar("SELECT count(DISTINCT item_id) FROM llm_calls") == 12


def test_concurrent_identical_requests_share_one_call(store) -> None:
    fake = FakeLLM(default=GOOD, delay_s=0.1)
    gateway = Gateway(fake, store, concurrency=4)
    answers = gateway.complete_many([ask("same")] * 4)
    assert fake.calls == 1
    assert sorted(a.cached for a in answers) == [False, True, True, True]
    assert store.scalar("SELECT count(*) FROM llm_calls") == 1


def test_gateway_without_store_still_caches_in_memory() -> None:
    fake = FakeLLM(default=GOOD)
    gateway = Gateway(fake, None)
    gateway.complete(ask("q"))
    assert gateway.complete(ask("q")).cached and fake.calls == 1
    assert gateway.usage()[0]["calls"] == 1


def test_recheck_store_finds_answers_written_by_another_process(store) -> None:
    late = Gateway(FakeLLM(default={"answer": "late", "confidence": 0.0}), store, recheck_store_on_miss=True)
    Gateway(FakeLLM(default=GOOD), store).complete(ask("q"))  # another writer, after `late` loaded
    response = late.complete(ask("q"))
    assert response.cached and response.parsed == GOOD


def test_many_call_segments_are_merged_at_start_and_still_served(store) -> None:
    first = Gateway(FakeLLM(default=GOOD), store)
    for i in range(4):
        first.complete(ask(f"q{i}"))
    assert len(store.segments("llm_calls")) == 4
    fake = FakeLLM(default={"answer": "new", "confidence": 0.0})
    second = Gateway(fake, store, compact_over=3)
    assert len(store.segments("llm_calls")) == 1
    assert all(second.complete(ask(f"q{i}")).cached for i in range(4)) and fake.calls == 0
    assert store.scalar("SELECT count(*) FROM llm_calls") == 4


def test_grouped_call_rows_land_together_at_a_checkpoint_or_when_the_window_has_passed(store) -> None:
    """A generation run's gateway writes its call rows together: one segment for calls finished
    within ``record_every_s``, and any caller's checkpoint writes what is pending."""
    gateway = Gateway(FakeLLM(default=GOOD), store, record_every_s=1.5)
    for i in range(5):
        gateway.complete(ask(f"q{i}"))
    assert store.segments("llm_calls") == []  # all within the window: nothing written yet
    gateway.flush_records()  # a candidate's checkpoint
    assert len(store.segments("llm_calls")) == 1 and store.scalar("SELECT count(*) FROM llm_calls") == 5
    gateway.complete(ask("q5"))
    time.sleep(1.6)
    gateway.complete(ask("q6"))  # finishes after the window: both pending rows go in one segment
    assert len(store.segments("llm_calls")) == 2 and store.scalar("SELECT count(*) FROM llm_calls") == 7
    gateway.complete(ask("q7"))
    gateway.close()
    assert store.scalar("SELECT count(*) FROM llm_calls") == 8
    # a new gateway serves every recorded answer, and without a window each call is written at once
    at_once = Gateway(FakeLLM(default={"answer": "new", "confidence": 0.0}), store)
    assert all(at_once.complete(ask(f"q{i}")).cached for i in range(8))
    at_once.complete(ask("q8"))
    assert store.scalar("SELECT count(*) FROM llm_calls") == 9
