"""The loop end to end with a scripted model, in both calling protocols."""

from __future__ import annotations

import pytest

from agentkit import FIVE_QUERIES, GOAL, REASON, SUMMARY, finalize, make_llm, save, search, settings_with
from factory.agent import SearchAgent
from factory.agent.tools import action_schema, tool_specs
from factory.settings import Settings


def two_round_script(protocol: str) -> list:
    return [
        *[search(protocol, q) for q in FIVE_QUERIES],
        save(protocol, ["en_place_001_0", "en_river_ashkel_0"]),
        search(protocol, "Great Ashkel Flood 1891"),
        finalize(protocol, ["en_place_001_0", "en_event_flood_1891_0", "en_river_ashkel_0"]),
    ]


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_two_rounds_save_then_finalize(protocol, searcher):
    llm = make_llm(protocol, two_round_script(protocol))
    agent = SearchAgent(searcher, llm, Settings(), lang="en")
    assert agent.protocol == protocol
    trace = agent.episode("Which flood destroyed the first bridge of the town on the Ashkel?", item_id="q1")

    assert trace.finalized_by == "model"
    assert [r.chunk_id for r in trace.ranking] == ["en_place_001_0", "en_event_flood_1891_0", "en_river_ashkel_0"]
    assert [r.ended_by for r in trace.rounds] == ["save", "finalize"]
    assert trace.queries == FIVE_QUERIES + ["Great Ashkel Flood 1891"]
    assert trace.searches == 6 and trace.rejections == 0
    assert trace.profile == "standard"

    # round 2 starts fresh: only the system prompt and the rendered state
    round2_first = llm.requests[6]
    assert len(round2_first.messages) == 2
    state_text = round2_first.messages[1].content
    assert "en_place_001_0: " + REASON in state_text
    assert SUMMARY in state_text and GOAL in state_text
    assert "Covered concepts: town" in state_text and "Unresolved concepts: flood" in state_text
    assert "Vellmoor" not in "".join(m.content or "" for m in round2_first.messages[:1])  # no old transcript

    if protocol == "tools":
        assert llm.requests[0].tools == tool_specs(agent.limits)
        assert llm.requests[0].output_schema is None
        assert llm.requests[1].messages[-1].role == "tool"
    else:
        assert llm.requests[0].tools == []
        assert llm.requests[0].output_schema == action_schema(agent.limits)
        assert llm.requests[1].messages[-1].role == "user"
        assert "search_corpus(query, top_k?)" in llm.requests[0].messages[0].content


def test_results_show_chunk_ids_and_are_cut_to_snippet_length(searcher, corpus_en):
    settings = settings_with(snippet_tokens=20)
    llm = make_llm("json", [search("json", "Vellmoor", top_k=2)], default="stop")
    agent = SearchAgent(searcher, llm, settings, text_of=corpus_en.__getitem__)
    trace = agent.episode("q?")
    turn = trace.turns[0]
    assert [h.chunk_id for h in turn.results] == [h.chunk_id for h in searcher.search("Vellmoor", 2)]
    for hit in turn.results:
        assert f"chunk_id: {hit.chunk_id}\nscore: {hit.score:.3f}\n" in turn.message  # {chunk_id, snippet, score}
    body = turn.message.split("chunk_id: ")[1].split("\n", 2)[2].split("\n\n")[0]
    assert len(body) <= 82 and body.endswith("…")  # 20 tokens at 4 characters a token


def test_small_profile_chosen_from_context_window_and_reported(searcher):
    llm = make_llm("json", [], context_tokens=8192)
    agent = SearchAgent(searcher, llm, Settings())
    assert agent.profile == "small"
    small = Settings().agent.small
    assert agent.limits.top_k_default == small.top_k_default < Settings().agent.standard.top_k_default
    assert agent.limits.round_token_budget <= 8192 - small.max_output_tokens
    trace = agent.episode("q?")
    assert trace.profile == "small"
    assert trace.config.limits.snippet_tokens == small.snippet_tokens

    big = SearchAgent(searcher, make_llm("json", [], context_tokens=131_072), Settings())
    assert big.profile == "standard" and big.limits.round_token_budget == 32_768


def test_max_rounds_override_caps_rounds(searcher):
    settings = Settings(agent={"max_rounds": 2})
    agent = SearchAgent(searcher, make_llm("json", []), settings)
    assert agent.limits.rounds == 2


def test_fallback_ranking_from_saved_then_seen(searcher):
    script = [
        *[search("json", q) for q in FIVE_QUERIES],
        save("json", ["en_river_ashkel_0"]),
    ]
    llm = make_llm("json", script)  # then only prose: the model never finalizes
    trace = SearchAgent(searcher, llm, settings_with(rounds=2)).episode("q?")
    assert trace.finalized_by == "fallback"
    ids = [r.chunk_id for r in trace.ranking]
    assert ids[0] == "en_river_ashkel_0"
    seen_rest = [c for c in trace.seen if c != "en_river_ashkel_0"]
    assert ids[1:] == seen_rest[: 10 - 1]
    assert len(ids) == 10
    assert [r.ended_by for r in trace.rounds] == ["save", "no_tool_calls"]


def test_llm_error_ends_episode_with_fallback(searcher):
    from factory.llm.types import LLMResponse

    # the call is retried llm_retries (3) times; the fourth failure ends the episode
    down = [LLMResponse(error=f"backend down {i}") for i in range(4)]
    llm = make_llm("json", [search("json", "Vellmoor"), *down])
    trace = SearchAgent(searcher, llm, settings_with(llm_retry_wait_s=0)).episode("q?")
    assert trace.error == "backend down 3" and trace.outcome == "error"
    assert trace.finalized_by == "fallback"
    assert trace.rounds[-1].ended_by == "llm_error" and len(trace.rounds) == 1
    assert trace.turns[-1].llm_errors == [f"backend down {i}" for i in range(4)]
    assert [r.chunk_id for r in trace.ranking] == trace.seen[:10]


def test_gateway_gets_stage_and_item_id(searcher):
    class Gatewayish:
        name, model, context_tokens = "gw", "m", 131_072

        def __init__(self):
            self.inner = make_llm("json", [finalize("json", [])])
            self.seen = []

        def complete(self, request, stage=None, item_id=None):
            self.seen.append((stage, item_id))
            return self.inner.complete(request)

    llm = Gatewayish()
    SearchAgent(searcher, llm, settings_with(rounds=1), stage="eval").episode("q?", item_id="task-7")
    assert llm.seen[0] == ("eval", "task-7")


def test_exception_from_llm_is_recorded_not_raised(searcher):
    class Broken:
        name, model, context_tokens = "broken", "m", 131_072

        def complete(self, request):
            raise RuntimeError("socket closed")

    trace = SearchAgent(searcher, Broken(), settings_with(llm_retry_wait_s=0)).episode("q?")
    assert trace.error == "RuntimeError: socket closed"
    assert trace.finalized_by == "fallback" and trace.ranking == []


def test_overriding_one_small_field_keeps_the_small_defaults(searcher, monkeypatch):
    from factory.settings import load_settings

    monkeypatch.setenv("FACTORY_AGENT__SMALL__MAX_TURNS_PER_ROUND", "3")
    settings = load_settings()
    agent = SearchAgent(searcher, make_llm("json", [], context_tokens=8192), settings)
    assert agent.limits.max_turns_per_round == 3
    assert agent.limits.snippet_tokens == 80 and agent.limits.top_k_max == 5 and agent.limits.round_token_budget == 6144


def test_through_the_gateway_calls_are_logged_by_stage_and_item_and_reruns_are_cached(searcher, store):
    from factory.llm.gateway import Gateway

    script = [search("json", "Vellmoor"), finalize("json", ["en_place_001_0"])]
    gateway = Gateway(make_llm("json", list(script)), store)
    first = SearchAgent(searcher, gateway, settings_with(rounds=1), stage="agent_run").episode("Q?", item_id="d-1")
    rows = store.query("SELECT stage, item_id FROM llm_calls ORDER BY stage")
    assert rows == [{"stage": "agent_run", "item_id": "d-1"}] * 2
    # the same episode again spends no call: every request is served from the cache
    again = Gateway(make_llm("json", []), store)
    second = SearchAgent(searcher, again, settings_with(rounds=1), stage="agent_run").episode("Q?", item_id="d-1")
    assert [r.chunk_id for r in second.ranking] == [r.chunk_id for r in first.ranking] == ["en_place_001_0"]
    assert again.backend.calls == 0


def test_protocol_follows_backend_capability():
    from factory.agent.config import supports_tools
    from factory.llm.gateway import Gateway
    from factory.llm.openai_backend import OpenAIBackend

    vllm = OpenAIBackend(["http://127.0.0.1:9/v1"], "m", context_tokens=32_768)
    llama_server = OpenAIBackend(["http://127.0.0.1:9/v1"], "m", structured="json_object", context_tokens=8192)
    assert supports_tools(vllm) and supports_tools(Gateway(vllm))
    assert not supports_tools(llama_server) and not supports_tools(Gateway(make_llm("json", [])))
    flagged = make_llm("tools", [])
    assert supports_tools(Gateway(flagged))  # an explicit flag on the backend wins
