"""The agent with the real embedded model (SmolLM2-135M through llama.cpp): the plumbing
holds whatever the model writes. Its search quality is reported by bench/agent.py."""

from __future__ import annotations

import pytest

from factory.agent import SearchAgent, replay_request
from factory.agent.tools import TOOL_NAMES
from factory.settings import Settings


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_runtime")
def test_embedded_model_episode_is_well_formed(searcher, corpus_en):
    pytest.importorskip("llama_cpp")
    from factory.llm.registry import make_llm

    backend = make_llm("llamacpp:smollm2-135m")
    requests = []

    class Recording:
        name, model, context_tokens = backend.name, backend.model, backend.context_tokens

        def complete(self, request):
            requests.append(request)
            return backend.complete(request)

    # two turns with short results keep this to about 2,000 prompt tokens in all
    settings = Settings(agent={"max_rounds": 1, "small": {"max_turns_per_round": 2, "top_k_max": 2, "snippet_tokens": 40}})
    agent = SearchAgent(searcher, Recording(), settings, text_of=corpus_en.__getitem__)
    assert (agent.profile, agent.protocol) == ("small", "json")  # chosen from the 8,192-token window and no tools
    trace = agent.episode("Which flood destroyed the first Carrow Bridge?", item_id="embedded")

    assert trace.error is None
    assert 1 <= len(trace.turns) <= 2 and len(trace.rounds) == 1
    for turn in trace.turns:
        # grammar-constrained decoding: every turn is one of the three actions, accepted or refused with a
        # reason; only a reply cut off by the token limit can fail to parse
        assert all(c.action in TOOL_NAMES for c in turn.calls) or turn.rejection == "parse_error", (turn.action, turn.assistant)
        assert turn.rejected is bool(turn.rejection)
        assert turn.replies and turn.message
        assert replay_request(trace, turn.turn_no) == requests[turn.turn_no - 1]
    assert trace.finalized_by in ("model", "fallback") and len(trace.ranking) <= 10
    assert set(trace.seen) <= set(corpus_en)
