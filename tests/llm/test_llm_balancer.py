"""Several endpoints of one model: least-busy choice, failover, rest and return of a dead endpoint."""

from __future__ import annotations

import time

from pydantic import BaseModel

from factory.llm import Gateway, LLMRequest, make_llm
from factory.llm.balancer import EndpointPool
from factory.llm.fake_server import FakeOpenAIServer, llm_answer


class City(BaseModel):
    city: str
    country: str


def ask(i: int) -> LLMRequest:
    return LLMRequest.chat("Answer in JSON.", f"question number {i}", output=City)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pool_prefers_the_least_busy_endpoint_and_rests_a_failing_one() -> None:
    clock = Clock()
    pool = EndpointPool(["a", "b", "c"], cooldown_s=2.0, max_cooldown_s=5.0, clock=clock)
    first, second, third = pool.acquire(), pool.acquire(), pool.acquire()
    assert (first, second, third) == (0, 1, 2)  # all idle: fewest sent, then list order
    pool.release(1, ok=True)
    assert pool.acquire() == 1  # the only one with nothing in flight
    pool.release(0, ok=True)
    pool.release(2, ok=True)
    pool.release(1, ok=True)
    # "a" fails at the connection level: it rests, doubling while it keeps failing, capped
    pool.release(pool.acquire(), ok=False, down=True)
    assert pool.resting(0) == 2.0
    assert {pool.acquire() for _ in range(4)} == {1, 2}
    clock.now += 2.0
    assert pool.acquire() == 0  # awake again: probed, and it fails again
    pool.release(0, ok=False, down=True)
    assert pool.resting(0) == 4.0
    clock.now += 4.0
    pool.release(pool.acquire(), ok=False, down=True)
    assert pool.resting(0) == 5.0  # the cap
    # an HTTP 500 is not the endpoint going away: no rest
    pool.release(1, ok=False, down=False)
    assert pool.resting(1) == 0.0
    # a request avoids the endpoints it failed on, unless nothing else is left
    assert pool.acquire(avoid={1}) == 2
    assert pool.acquire(avoid={1, 2}) == 0  # resting, but the only one left: a probe
    clock.now += 5.0
    pool.release(0, ok=True)
    assert pool.resting(0) == 0.0 and pool.snapshot()[0]["ok"] == 2


def test_all_resting_probes_the_one_waking_first() -> None:
    clock = Clock()
    pool = EndpointPool(["a", "b"], cooldown_s=3.0, clock=clock)
    pool.release(pool.acquire(), ok=False, down=True)  # a rests until +3
    clock.now += 1.0
    pool.release(pool.acquire(), ok=False, down=True)  # b rests until +4
    assert pool.acquire() == 0


def test_a_slow_endpoint_gets_less_work(store) -> None:
    with FakeOpenAIServer(delay_s=0.25) as slow, FakeOpenAIServer() as fast:
        gateway = Gateway(make_llm(f"openai:{slow.url},{fast.url}#fake-http"), store, concurrency=4)
        answers = gateway.complete_many([ask(i) for i in range(24)])
        assert all(a.ok for a in answers)
        assert len(slow.log) + len(fast.log) == 24
        assert len(fast.log) > 2 * len(slow.log) > 0  # round-robin would give 12 and 12


def test_a_dead_endpoint_is_skipped_then_used_again_when_it_returns(store) -> None:
    with FakeOpenAIServer() as one, FakeOpenAIServer() as two:
        backend = make_llm(f"openai:{one.url},{two.url}#fake-http?timeout=2&retries=2&cooldown=0.5")
        gateway = Gateway(backend, store, concurrency=3)
        before = gateway.complete_many([ask(i) for i in range(10)])
        assert all(a.ok for a in before) and len(one.log) > 0 and len(two.log) > 0

        two.stop()  # the second server goes away, its open connections too
        seen_two = len(two.log)
        during = gateway.complete_many([ask(i) for i in range(10, 30)])
        assert all(a.ok for a in during)  # every request failed over to the first server
        assert len(two.log) == seen_two
        state = backend.pool.snapshot()
        assert state[1]["failed"] >= 1 and state[0]["ok"] >= 20
        rows = store.query("SELECT count(*) AS n, count(*) FILTER (WHERE ok) AS ok FROM llm_calls")[0]
        assert rows == {"n": 30, "ok": 30}

        two.start()  # back on the same port
        deadline = time.monotonic() + 30
        while backend.pool.resting(1) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        after = gateway.complete_many([ask(i) for i in range(30, 50)])
        assert all(a.ok for a in after)
        assert len(two.log) > seen_two  # it was tried again and serves again


def test_all_endpoints_down_is_a_recorded_error(store) -> None:
    with FakeOpenAIServer() as one, FakeOpenAIServer() as two:
        spec = f"openai:{one.url},{two.url}#fake-http?timeout=1&retries=2&cooldown=0.2"
    backend = make_llm(spec)  # both stopped when the block ended
    answer = Gateway(backend, store).complete(ask(1))
    assert answer.error and "APIConnectionError" in answer.error
    assert sum(e["failed"] for e in backend.pool.snapshot()) == 3  # one try and two retries, across both


def test_an_in_process_llm_behind_two_servers_answers_as_it_does_directly() -> None:
    from factory.llm.fake_factory import factory_fake

    direct = factory_fake()
    request = LLMRequest.chat("You write fact sheets.", '<passage id="P1">Ada Lovelace lived in London. '
                              'She wrote notes.</passage>', output=City)
    with FakeOpenAIServer(answer=llm_answer(factory_fake())) as one, \
            FakeOpenAIServer(answer=llm_answer(factory_fake())) as two:
        over_http = Gateway(make_llm(f"openai:{one.url},{two.url}#fake-factory"), None).complete(request)
    expected = direct.complete(request)
    assert over_http.ok and over_http.parsed == expected.parsed
