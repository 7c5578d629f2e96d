"""The fake server's load model: continuous batching, queueing beyond capacity, utilisation."""

from __future__ import annotations

import httpx
import pytest

from factory.llm import Gateway, LLMRequest, Sampling, make_llm
from factory.llm.fake_load import BatchEngine, LoadModel
from factory.llm.fake_server import FakeOpenAIServer


def test_the_decode_rate_falls_from_alone_to_full_batch() -> None:
    model = LoadModel()
    assert model.decode_rate(1) == pytest.approx(60.0) and model.decode_rate(64) == pytest.approx(25.0)
    rates = [model.decode_rate(n) for n in range(1, 65)]
    assert rates == sorted(rates, reverse=True)
    # the batch as a whole gets faster as it fills: that is why a server must be kept full
    assert 64 * model.decode_rate(64) == pytest.approx(1600.0) and 8 * model.decode_rate(8) < 1600.0


def test_ideal_throughput_is_the_lower_of_prefill_and_slots() -> None:
    model = LoadModel(capacity=64, prefill_tps=8000, decode_alone=60, decode_full=25)
    # short prompts: the slots bound it, 64 / (0.05 s prefill + 8 s decode)
    assert model.ideal_requests_per_s(400, 200) == pytest.approx(64 / (400 / 8000 + 200 / 25))
    # long prompts, short answers: prefill bounds it
    assert model.ideal_requests_per_s(16000, 5) == pytest.approx(0.5)


def test_the_engine_batches_queues_and_finishes_at_the_model_times() -> None:
    now = [0.0]
    engine = BatchEngine(LoadModel(capacity=2, prefill_tps=1000, decode_alone=10, decode_full=5),
                         clock=lambda: now[0])
    try:
        a, b, c = engine.submit(100, 10), engine.submit(100, 10), engine.submit(0, 10)
        assert engine.stats()["queued"] == 1 and engine.stats()["in_flight"] == 2
        now[0] = 100.0
        stats = engine.stats()
    finally:
        engine.stop()
    # a prefills 0.1 s then decodes 10 tokens at 5/s (two in flight); b's prefill waits for a's
    assert a.finished == pytest.approx(2.1) and b.finished == pytest.approx(2.2)
    # c waits for a's slot, decodes 0.5 token beside b, then 9.5 alone at 10/s
    assert c.admitted == pytest.approx(2.1) and c.finished == pytest.approx(3.15)
    assert c.queue_s == pytest.approx(2.1) and all(s.done.is_set() for s in (a, b, c))
    assert stats["requests"] == 3 and stats["max_in_flight"] == 2 and stats["max_queued"] == 1
    assert stats["busy_window_s"] == pytest.approx(3.15)
    # sequences in flight over time: 2 until 2.2, then 1 until 3.15
    assert stats["utilisation"] == pytest.approx((2 * 2.2 + 0.95) / (2 * 3.15))


def test_the_server_serves_on_the_load_model_and_reports_its_figures() -> None:
    # answers of 50 tokens: a wave of four takes 1 s virtual, 0.1 s real, long enough for
    # eight client threads to be there even on a busy machine
    with FakeOpenAIServer(lambda body: "x" * 200, load=LoadModel(capacity=4, prefill_tps=20000, decode_alone=100,
                                                                 decode_full=50), scale=10) as server:
        gateway = Gateway(make_llm(f"openai:{server.url}#m"), None, concurrency=8)
        requests = [LLMRequest.chat(None, f"question {i}", sampling=Sampling(max_tokens=64)) for i in range(16)]
        answers = gateway.complete_many(requests)
        stats = httpx.get(server.url.removesuffix("/v1") + "/load").json()
        reset = httpx.post(server.url.removesuffix("/v1") + "/load/reset").json()
    assert all(a.ok for a in answers)
    assert stats["requests"] == 16 and stats["max_in_flight"] == 4 and stats["max_queued"] >= 1
    assert 0 < stats["utilisation"] <= 1 and stats["mean_queue_s"] > 0
    assert stats["completion_tokens"] == sum(a.tokens_out for a in answers)
    assert reset["requests"] == 0 and reset["utilisation"] == 0
