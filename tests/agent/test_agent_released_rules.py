"""The released harness's semantics, one scripted episode per rule (DESIGN.md, "The search agent")."""

from __future__ import annotations

import json
import re

import pytest

from agentkit import (
    FIVE_QUERIES, REASON, SilentTokens, act, finalize, json_turn, make_llm, save, search, settings_with, tools_turn,
)
from factory.agent import SearchAgent, replay_request
from factory.llm.types import LLMResponse
from factory.settings import Settings

QUESTION = "Which flood destroyed the first Carrow Bridge?"


def episode(searcher, script, settings=None, protocol="json", llm=None, **kw):
    llm = llm or make_llm(protocol, script)
    trace = SearchAgent(searcher, llm, settings or Settings(), **kw).episode(QUESTION, item_id="r")
    return trace, llm


def calls(trace, code):
    return [(t, c) for t in trace.turns for c in t.calls if c.rejected and code in c.rejection.split(",")]


# ----------------------------------------------------------- parallel calls
@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_parallel_calls_each_count_and_repeats_in_one_turn_are_refused(searcher, protocol):
    turn = json_turn if protocol == "json" else tools_turn
    script = [
        turn(search(protocol, "Ashkel", top_k=3), search(protocol, " ashkel "), search(protocol, "Ashkel river", top_k=3),
             *[search(protocol, q) for q in FIVE_QUERIES[:2]]),
        turn(search(protocol, FIVE_QUERIES[2])),
        save(protocol, ["en_river_ashkel_0"]),  # five searches ran this round: four in one turn, one after
    ]
    trace, llm = episode(searcher, script, settings_with(rounds=2), protocol)
    first = trace.turns[0]
    assert [c.action for c in first.calls] == ["search_corpus"] * 5
    [(_, repeat)] = calls(trace, "query_repeated")
    assert repeat is first.calls[1] and "already searched in this round" in repeat.message
    assert first.queries == ["Ashkel", "Ashkel river", "Vellmoor", "River Ashkel"]
    # a later call of the turn does not show what an earlier one showed
    shown = [h.chunk_id for c in first.calls for h in c.results]
    assert len(shown) == len(set(shown))
    assert trace.rounds[0].searches == 5 and trace.rounds[0].ended_by == "save"
    # every call is answered, in call order, and the next request is exactly what was stored
    if protocol == "tools":
        assert [m.tool_call_id for m in first.replies] == [f"c{i}" for i in range(5)]
    else:
        [reply] = first.replies
        assert reply.role == "user" and reply.content.count("[search_corpus] ") == 5
    for t in trace.turns:
        assert replay_request(trace, t.turn_no) == llm.requests[t.turn_no - 1]


def test_calls_after_the_call_that_ends_the_round_are_not_run(searcher):
    script = [search("json", "Vellmoor"),
              json_turn(finalize("json", ["en_place_001_0"]), search("json", "Dunmere"))]
    trace, _ = episode(searcher, script)
    [(turn, late)] = calls(trace, "after_round_end")
    assert turn.turn_no == 2 and "finalize_ranking already ended the round" in late.message
    assert trace.outcome == "finalized" and trace.queries == ["Vellmoor"]


def test_calls_past_the_per_turn_cap_are_refused(searcher):
    script = [json_turn(*[search("json", q) for q in FIVE_QUERIES])]
    trace, _ = episode(searcher, script, settings_with(max_calls_per_turn=3, max_turns_per_round=1, rounds=1))
    refused = calls(trace, "too_many_calls")
    assert len(refused) == 2 and trace.searches == 3


def test_a_json_reply_may_also_be_a_bare_list_of_actions(searcher):
    bare = LLMResponse(text="Two searches: " + json.dumps([search("json", "Vellmoor"), search("json", "Dunmere")]))
    trace, _ = episode(searcher, [bare])
    assert trace.turns[0].queries == ["Vellmoor", "Dunmere"]


# ----------------------------------------------------------- current context
def test_finalize_naming_a_chunk_seen_only_in_an_earlier_round_is_refused(searcher):
    script = [
        *[search("json", q) for q in FIVE_QUERIES],  # Vellmoor shows en_place_001_0
        save("json", ["en_river_ashkel_0"]),
        finalize("json", ["en_river_ashkel_0", "en_place_001_0"]),  # en_place_001_0: round 1 only, not saved
        search("json", "Vellmoor market town"),  # resurfaces it
        finalize("json", ["en_river_ashkel_0", "en_place_001_0"]),
    ]
    trace, llm = episode(searcher, script, settings_with(rounds=3))
    refused = trace.turns[6]
    assert refused.round_no == 2 and refused.action == "finalize_ranking"
    assert refused.rejected and refused.rejection == "chunk_not_in_context"
    assert "en_place_001_0" in refused.message and "en_river_ashkel_0" not in refused.message  # saved: in context
    assert "not in your current context" in llm.requests[7].messages[-1].content
    again = trace.turns[7]
    assert "en_place_001_0" in [h.chunk_id for h in again.results]
    assert not trace.turns[8].rejected and trace.outcome == "finalized"
    assert [r.chunk_id for r in trace.ranking] == ["en_river_ashkel_0", "en_place_001_0"]


def test_save_naming_a_chunk_from_an_earlier_round_is_refused(searcher):
    script = [
        *[search("json", q) for q in FIVE_QUERIES], save("json", ["en_river_ashkel_0"]),
        *[search("json", q) for q in ["Tessaly", "Fenn", "Halbridge", "Port Sallow", "Kell"]],
        save("json", ["en_place_001_0"]),
    ]
    trace, _ = episode(searcher, script, settings_with(rounds=3))
    round2 = {h.chunk_id for t in trace.round_turns(2) for h in t.results}
    assert "en_place_001_0" not in round2  # the scripted queries of round 2 do not show it again
    [(turn, call)] = calls(trace, "chunk_not_in_context")
    assert turn.round_no == 2 and call.action == "save_and_advance"


def test_a_finalize_may_not_use_results_of_a_search_in_the_same_turn(searcher):
    # the model wrote both calls before it saw the search's results
    script = [json_turn(search("json", "Vellmoor"), finalize("json", ["en_place_001_0"])),
              finalize("json", ["en_place_001_0"])]
    trace, _ = episode(searcher, script)
    [(turn, call)] = calls(trace, "chunk_not_in_context")
    assert turn.turn_no == 1 and call.action == "finalize_ranking"
    assert not trace.turns[1].rejected and trace.outcome == "finalized"


def test_made_up_ids_are_unknown(searcher):
    trace, _ = episode(searcher, [search("json", "Vellmoor"), finalize("json", ["made_up_7"])])
    assert calls(trace, "unknown_chunk")


# ---------------------------------------------------------------- saving
def test_saved_and_dropped_chunks_must_not_overlap(searcher):
    script = [
        *[search("json", q) for q in FIVE_QUERIES], save("json", ["en_place_001_0", "en_river_ashkel_0"]),
        *[search("json", q) for q in ["bridge", "college", "island", "lake", "flood"]],
        save("json", ["en_place_001_0"], drop_from_saved=["en_place_001_0"]),
        save("json", ["en_place_001_0"], drop_from_saved=["en_river_ashkel_0"]),
    ]
    trace, _ = episode(searcher, script, settings_with(rounds=3))
    [(turn, call)] = calls(trace, "save_drop_overlap")
    assert "en_place_001_0 is in both saved_chunks and drop_from_saved" in call.message
    assert [s.chunk_id for s in trace.rounds[2].state.saved] == ["en_place_001_0"]


def test_passing_a_saved_chunk_again_updates_its_reason_in_place(searcher, corpus_en):
    better = "it names the Ashkel as the river the town stands on"
    script = [
        *[search("json", q) for q in FIVE_QUERIES], save("json", ["en_place_001_0", "en_river_ashkel_0"]),
        *[search("json", q) for q in ["bridge", "college", "island", "lake", "flood"]],
        save("json", [], saved_chunks=[{"chunk_id": "en_place_001_0", "reason": better}]),
    ]
    trace, _ = episode(searcher, script, settings_with(rounds=3), text_of=corpus_en.__getitem__)
    assert not trace.rejections
    saved = trace.rounds[2].state.saved
    assert [(s.chunk_id, s.reason) for s in saved] == [("en_place_001_0", better), ("en_river_ashkel_0", REASON)]
    assert saved[0].text == corpus_en["en_place_001_0"]
    assert "1 reason(s) updated" in trace.turns[11].message


def test_saved_evidence_is_shown_in_full_up_to_the_snippet_cap(searcher, corpus_en):
    script = [*[search("json", q) for q in FIVE_QUERIES], save("json", ["en_place_001_0"])]
    for tokens, whole in ((512, True), (12, False)):
        trace, llm = episode(searcher, list(script), settings_with(rounds=2, snippet_tokens=tokens),
                             text_of=corpus_en.__getitem__)
        opening = trace.rounds[1].start_messages[1].content
        text = " ".join(corpus_en["en_place_001_0"].split())
        assert (text in opening) is whole
        if not whole:
            assert text[:30] in opening and "…" in opening  # cut at 12 tokens x 4 characters


# ---------------------------------------------------------- no-new streak
def test_the_no_new_passage_streak_is_counted_per_round(searcher):
    nothing = ["zzz", "qqq", "xxx", "yyy"]
    script = [
        search("json", "Vellmoor", top_k=10), *[search("json", q) for q in nothing],  # streak 4 in round 1
        save("json", ["en_place_001_0"]),
        search("json", "Vellmoor", top_k=10),  # round 2: round-1 results resurface, and they count as new
        search("json", "www"),
    ]
    trace, _ = episode(searcher, script, settings_with(rounds=2))
    assert not any(t.warnings for t in trace.turns)
    resurfaced = trace.turns[6]
    assert resurfaced.round_no == 2
    assert {h.chunk_id for h in trace.turns[0].results} & {h.chunk_id for h in resurfaced.results}  # shown again


def test_a_search_showing_only_what_this_round_already_showed_brings_nothing_new(searcher):
    # eleven chunks name Vellmoor: two searches show them all, five more only find them again
    script = [search("json", "Vellmoor", top_k=10),
              *[search("json", f"Vellmoor {w}", top_k=10) for w in ["zqa", "zqb", "zqc", "zqd", "zqe", "zqf"]]]
    trace, _ = episode(searcher, script)
    assert trace.turns[1].results and not trace.turns[2].results
    assert not trace.turns[5].warnings
    assert "5 searches in a row brought no new passage" in trace.turns[6].message


# ------------------------------------------------------------ token lock
def test_searches_lock_on_the_backends_reported_prompt_tokens(searcher):
    def reported(tokens, query):
        return LLMResponse(text=json.dumps(search("json", query)), tokens_in=tokens)

    script = [reported(31_000, "Vellmoor"), reported(31_200, "Dunmere"), search("json", "Ashkel")]
    trace, _ = episode(searcher, script, settings_with(rounds=2))
    first = trace.turns[0]
    assert first.rejection == "search_locked"
    used = int(re.search(r"about ([\d,]+) of 32,768 tokens", first.message).group(1).replace(",", ""))
    assert 31_000 <= used < 31_100  # the report, plus the estimate of what the model wrote
    assert trace.rounds[0].ended_by == "locked_searches"
    # the same replies estimated from characters would not have locked anything
    estimated, _ = episode(searcher, [search("json", "Vellmoor")], llm=SilentTokens(make_llm("json", [search("json", "Vellmoor")])))
    assert estimated.turns[0].round_tokens < 2_000 and not estimated.turns[0].rejected


def test_a_backend_reporting_denser_tokens_makes_later_estimates_larger(searcher, corpus_en):
    def dense(request):
        chars = sum(len(m.content or "") for m in request.messages)
        return LLMResponse(text=json.dumps(search("json", f"Ashkel {len(request.messages)}")), tokens_in=chars // 2)

    llm = make_llm("json", [], default=dense)
    trace, _ = episode(searcher, [], settings_with(max_turns_per_round=2, rounds=1), llm=llm,
                       text_of=corpus_en.__getitem__)
    first = trace.turns[0]
    reply = sum(len(m.content or "") for m in first.replies)
    # after a report of 2 characters a token, the results are estimated at 2 as well, not 4
    assert first.round_tokens - first.tokens_in >= reply / 2


@pytest.mark.parametrize("window,budget", [(131_072, 32_768), (32_768, int(32_768 * 0.9) - 1024), (8192, None)])
def test_the_round_budget_leaves_one_completion_and_a_margin_of_the_window(searcher, window, budget):
    agent = SearchAgent(searcher, make_llm("json", [], context_tokens=window), Settings())
    limits = agent.limits
    assert limits.round_token_budget + limits.max_output_tokens <= window * 0.9
    if budget is not None:
        assert limits.round_token_budget == budget
    else:
        assert agent.profile == "small" and limits.round_token_budget == Settings().agent.small.round_token_budget


# ------------------------------------------------------------- finalizing
def test_an_empty_ranking_is_refused(searcher):
    trace, _ = episode(searcher, [search("json", "Vellmoor"), finalize("json", []), finalize("json", ["en_place_001_0"])])
    [(turn, call)] = calls(trace, "empty_ranking")
    assert turn.turn_no == 2 and turn.rejected and "the ranking is empty" in call.message
    assert trace.outcome == "finalized"


def test_finalize_needs_no_unresolved_list(searcher):
    bare = act("json", "finalize_ranking", ranking=[{"chunk_id": "en_place_001_0", "reason": REASON}],
               covered_concepts=["town"])
    trace, _ = episode(searcher, [search("json", "Vellmoor"), bare])
    assert trace.outcome == "finalized" and not trace.rejections


# ---------------------------------------------------------------- retries
def test_a_failed_model_call_is_retried_before_the_episode_ends(searcher):
    script = [search("json", "Vellmoor"), LLMResponse(error="HTTP 500 busy"), LLMResponse(error="HTTP 500 busy"),
              LLMResponse(error="timeout"), finalize("json", ["en_place_001_0"])]
    trace, llm = episode(searcher, script, settings_with(llm_retry_wait_s=0))
    assert llm.calls == 5 and len(trace.turns) == 2
    assert trace.turns[1].llm_errors == ["HTTP 500 busy", "HTTP 500 busy", "timeout"] and trace.turns[1].llm_error is None
    assert trace.error is None and trace.outcome == "finalized"


# ----------------------------------------------------------------- window
def test_a_backend_reporting_no_window_gets_the_settings_value_and_a_warning(searcher):
    quiet = make_llm("json", [], context_tokens=0)
    agent = SearchAgent(searcher, quiet, Settings())
    assert (agent.profile, agent.window, agent.window_source) == ("small", 8192, "settings")
    trace = agent.episode("q?")
    assert any("reported no context window; assumed 8,192 tokens" in w for w in trace.warnings)
    assert trace.config.context_window == 8192 and trace.config.window_source == "settings"
    roomy = SearchAgent(searcher, quiet, Settings(agent={"fallback_context_tokens": 131_072}))
    assert roomy.profile == "standard" and roomy.limits.round_token_budget == 32_768
    told = SearchAgent(searcher, make_llm("json", [], context_tokens=131_072), Settings()).episode("q?")
    assert told.config.window_source == "backend" and not any("context window" in w for w in told.warnings)
