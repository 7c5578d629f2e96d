"""How many candidates and calls a run keeps in flight (factory/capacity.py)."""

from __future__ import annotations

import pytest

from factory.capacity import CANDIDATE_MB, SERIAL, resolve_concurrency
from factory.generate import RunLimits
from factory.settings import load_settings

VLLM = "openai:http://127.0.0.1:8000/v1#qwen"


def _resolve(spec: str, **overrides):
    settings = load_settings(**{"llm.spec": spec, **overrides})
    return resolve_concurrency(settings.llm, settings.generate)


def test_auto_fills_a_server_and_keeps_the_embedded_backend_serial() -> None:
    server = _resolve(VLLM)
    assert server.server and (server.candidates, server.llm_calls, server.lookahead) == (64, 128, 256)
    assert server.in_flight == 64
    for spec in ("llamacpp:smollm2-135m", "fake:factory"):
        local = _resolve(spec)
        assert not local.server
        assert (local.candidates, local.llm_calls, local.lookahead) == (
            SERIAL["candidates"], SERIAL["llm_calls"], SERIAL["lookahead"])


def test_server_capacity_and_the_memory_budget_bound_auto() -> None:
    assert _resolve(VLLM, **{"llm.server_capacity": 16}).in_flight == 16
    small = _resolve(VLLM, **{"generate.memory_budget_mb": 100})
    assert small.candidates == int(100 / CANDIDATE_MB) == 19 and small.llm_calls == 38
    assert small.lookahead == 256  # the lookahead does not follow the memory bound: it fixes the tasks
    assert small.in_flight == 19


def test_numbers_win_over_auto_and_the_lookahead_caps_what_runs() -> None:
    explicit = _resolve(VLLM, **{"generate.concurrency": 8, "llm.concurrency": 3})
    assert (explicit.candidates, explicit.llm_calls, explicit.lookahead) == (8, 3, 256)
    capped = _resolve(VLLM, **{"generate.concurrency": 100, "generate.lookahead": 10})
    assert capped.candidates == 100 and capped.in_flight == 10  # more than the lookahead adds nothing
    settings = load_settings(**{"llm.spec": VLLM, "generate.lookahead": 10})
    limits = RunLimits.from_settings(settings, n=5, concurrency=32)  # a --concurrency flag beats the setting
    assert (limits.concurrency, limits.lookahead, limits.in_flight, limits.window) == (32, 10, 10, 10)


def test_the_lookahead_never_derives_from_the_concurrency() -> None:
    lookaheads = {RunLimits.from_settings(load_settings(**{"llm.spec": "fake:factory"}), n=3, concurrency=c).lookahead
                  for c in (1, 2, 7, 50)}
    assert lookaheads == {SERIAL["lookahead"]}


@pytest.mark.parametrize("bad", [0, -1, "many"])
def test_bad_values_are_refused(bad) -> None:
    with pytest.raises(Exception, match="concurrency"):
        load_settings(**{"generate.concurrency": bad})
