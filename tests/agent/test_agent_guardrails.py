"""One test per guardrail: the violation is refused with its message, the episode goes on."""

from __future__ import annotations

import re

import pytest

from agentkit import FIVE_QUERIES, REASON, SilentTokens, act, finalize, make_llm, save, search, settings_with
from factory.agent import SearchAgent
from factory.llm.types import LLMResponse, ToolCall
from factory.settings import Settings

P = "json"


def run(searcher, script, settings=None, protocol=P, **kw):
    llm = make_llm(protocol, script)
    return run_with(searcher, llm, settings, **kw), llm


def run_with(searcher, llm, settings=None, **kw):
    agent = SearchAgent(searcher, llm, settings or Settings(), **kw)
    return agent.episode("Which flood destroyed the first Carrow Bridge?", item_id="t")


def rejected(trace, code):
    return [t for t in trace.turns if t.rejected and code in t.rejection.split(",")]


def five_searches():
    return [search(P, q) for q in FIVE_QUERIES]


def test_save_needs_five_searches_this_round(searcher):
    script = [search(P, "Vellmoor"), search(P, "Dunmere"), save(P, ["en_place_001_0"]),
              *[search(P, q) for q in ["Ironworks", "Edmund Carrow", "Kell Island"]], save(P, ["en_place_001_0"]),
              finalize(P, ["en_place_001_0"])]
    trace, llm = run(searcher, script, settings_with(rounds=2))
    [turn] = rejected(trace, "save_too_few_searches")
    assert turn.turn_no == 3
    assert "at least 5 searches in this round; you have made 2" in turn.message
    # the model sees the error as the answer to its call, then continues
    assert "at least 5 searches" in llm.requests[3].messages[-1].content
    assert [r.ended_by for r in trace.rounds] == ["save", "finalize"]


def test_search_count_restarts_each_round(searcher):
    script = [*five_searches(), save(P, ["en_place_001_0"]), search(P, "flood"), save(P, ["en_place_001_0"])]
    trace, _ = run(searcher, script, settings_with(rounds=3))
    [turn] = rejected(trace, "save_too_few_searches")
    assert turn.round_no == 2 and "you have made 1" in turn.message


def test_save_disabled_in_last_round(searcher):
    script = [*five_searches(), save(P, ["en_place_001_0"]), finalize(P, ["en_place_001_0", "en_river_ashkel_0"])]
    trace, _ = run(searcher, script, settings_with(rounds=1))
    [turn] = rejected(trace, "save_last_round")
    assert "disabled in the last round" in turn.message and "finalize_ranking" in turn.message
    assert trace.finalized_by == "model" and trace.rounds[0].ended_by == "finalize"


def test_last_round_is_announced_in_its_context(searcher):
    trace, llm = run(searcher, [finalize(P, ["en_place_001_0"])], settings_with(rounds=1))
    assert "This is the last round" in llm.requests[0].messages[1].content


def test_save_needs_a_saved_chunk(searcher):
    script = [*five_searches(), save(P, []), save(P, ["en_place_001_0"])]
    trace, _ = run(searcher, script, settings_with(rounds=2))
    [turn] = rejected(trace, "save_nothing_saved")
    assert "at least 1 chunk" in turn.message
    assert trace.rounds[0].ended_by == "save"


@pytest.mark.parametrize("tool", ["save", "finalize"])
def test_reasons_need_twenty_characters(searcher, tool):
    short = [{"chunk_id": "en_place_001_0", "reason": "the town"}]
    bad = save(P, [], saved_chunks=short) if tool == "save" else finalize(P, [], ranking=short)
    good = save(P, ["en_place_001_0"]) if tool == "save" else finalize(P, ["en_place_001_0"])
    trace, _ = run(searcher, [*five_searches(), bad, good], settings_with(rounds=2))
    [turn] = rejected(trace, "reason_too_short")
    assert "en_place_001_0" in turn.message and "shorter than 20 characters" in turn.message
    assert trace.turns[-1].rejected is False


@pytest.mark.parametrize("tool", ["save", "finalize"])
def test_coverage_lists_must_not_overlap(searcher, tool):
    over = dict(covered_concepts=["town", "Flood"], unresolved_concepts=[" flood "])
    bad = save(P, ["en_place_001_0"], **over) if tool == "save" else finalize(P, ["en_place_001_0"], **over)
    trace, _ = run(searcher, [*five_searches(), bad], settings_with(rounds=2))
    [turn] = rejected(trace, "coverage_overlap")
    assert "'flood' is in both" in turn.message


@pytest.mark.parametrize("tool", ["save", "finalize"])
def test_coverage_lists_must_not_both_be_empty(searcher, tool):
    empty = dict(covered_concepts=[], unresolved_concepts=[])
    bad = save(P, ["en_place_001_0"], **empty) if tool == "save" else finalize(P, ["en_place_001_0"], **empty)
    trace, _ = run(searcher, [*five_searches(), bad], settings_with(rounds=2))
    [turn] = rejected(trace, "coverage_empty")
    assert "both empty" in turn.message


def test_finalize_refused_while_half_unresolved_except_last_round(searcher):
    half = dict(covered_concepts=["town"], unresolved_concepts=["flood"])
    script = [search(P, "Vellmoor"), finalize(P, ["en_place_001_0"], **half),
              *[search(P, q) for q in FIVE_QUERIES[1:]], search(P, "flood"), save(P, ["en_place_001_0"]),
              finalize(P, ["en_place_001_0"], **half)]
    trace, _ = run(searcher, script, settings_with(rounds=2))
    [turn] = rejected(trace, "finalize_unresolved")
    assert turn.round_no == 1 and "50% of the declared concepts are unresolved" in turn.message
    # the same coverage is accepted in the last round
    assert trace.rounds[1].ended_by == "finalize" and trace.finalized_by == "model"


def test_finalize_accepted_below_half_unresolved(searcher):
    fine = dict(covered_concepts=["town", "bridge"], unresolved_concepts=["flood"])
    trace, _ = run(searcher, [search(P, "Vellmoor"), finalize(P, ["en_place_001_0"], **fine)])
    assert trace.finalized_by == "model" and len(trace.rounds) == 1


def test_repeated_query_differing_in_case_or_spacing_refused(searcher):
    script = [search(P, "Carrow Bridge flood"), search(P, "  carrow   BRIDGE flood "), search(P, "Carrow Bridge")]
    trace, _ = run(searcher, script)
    [turn] = rejected(trace, "query_repeated")
    assert turn.turn_no == 2 and "already searched" in turn.message
    assert trace.queries == ["Carrow Bridge flood", "Carrow Bridge"]


def test_episode_scope_refuses_a_query_in_a_later_round_too(searcher):
    script = [*five_searches(), save(P, ["en_place_001_0"]), search(P, "vellmoor")]
    trace, _ = run(searcher, script, settings_with(rounds=2, query_dedup="episode"))
    [turn] = rejected(trace, "query_repeated")
    assert turn.round_no == 2 and "in this episode" in turn.message


def test_by_default_a_fresh_round_may_ask_an_earlier_query_again(searcher):
    # the fresh context no longer shows the earlier queries, so they are not held against the model
    script = [*five_searches(), save(P, ["en_place_001_0"]), search(P, "vellmoor"), search(P, "VELLMOOR")]
    trace, _ = run(searcher, script, settings_with(rounds=2))
    [turn] = rejected(trace, "query_repeated")
    assert turn.round_no == 2 and turn.query is None and "in this round" in turn.message
    assert trace.queries[-1] == "vellmoor"
    # the repeated query's results skip the saved chunk
    again = next(t for t in trace.turns if t.round_no == 2 and t.query == "vellmoor")
    assert "en_place_001_0" not in [h.chunk_id for h in again.results]


def test_results_shown_this_round_are_filtered(searcher):
    script = [search(P, "Ashkel", top_k=3), search(P, "Ashkel river", top_k=3)]
    trace, _ = run(searcher, script)
    first, second = trace.turns[0], trace.turns[1]
    assert not {h.chunk_id for h in first.results} & {h.chunk_id for h in second.results}
    raw = [h.chunk_id for h in searcher.search("Ashkel river", 10)]
    expected = [c for c in raw if c not in {h.chunk_id for h in first.results}][:3]
    assert [h.chunk_id for h in second.results] == expected
    assert "already shown this round or saved, left out" in second.message


def test_results_from_earlier_rounds_are_shown_again_but_saved_ones_never(searcher):
    script = [search(P, "Ashkel", top_k=3), *[search(P, q) for q in FIVE_QUERIES[1:]],
              save(P, ["en_river_ashkel_0"]), search(P, "Ashkel flood", top_k=10)]
    trace, _ = run(searcher, script, settings_with(rounds=2))
    round1 = {h.chunk_id for h in trace.turns[0].results}
    [later] = [t for t in trace.turns if t.query == "Ashkel flood"]
    assert later.round_no == 2
    last = [h.chunk_id for h in later.results]
    assert "en_river_ashkel_0" not in last
    assert (round1 - {"en_river_ashkel_0"}) & set(last)


def test_searches_locked_at_three_quarters_of_the_round_budget(searcher, corpus_en):
    settings = settings_with(round_token_budget=3000, snippet_tokens=175, top_k_default=5, max_output_tokens=64, rounds=2)
    script = [search(P, q) for q in ["Ashkel", "Vellmoor", "flood", "river", "bridge", "college", "island"]]
    trace, _ = run(searcher, script, settings, text_of=corpus_en.__getitem__)
    locked = [t for t in rejected(trace, "search_locked") if t.round_no == 1]
    assert locked, [t.round_tokens for t in trace.turns]
    first = locked[0]
    used = int(re.search(r"about ([\d,]+) of 3,000 tokens", first.message).group(1).replace(",", ""))
    assert used >= 0.75 * 3000
    # the search before it ran on a context still under the lock
    previous = trace.turns[first.turn_no - 2]
    assert previous.action == "search_corpus" and not previous.rejected
    context_before_previous = trace.turns[first.turn_no - 3].round_tokens
    assert context_before_previous < 0.75 * 3000
    assert "searches are locked" in first.message and "save_and_advance" in first.message
    # two turns of locked searches end the round
    assert len(locked) == 2 and trace.rounds[0].ended_by == "locked_searches"
    assert len(trace.rounds) == 2 and "token lock" in trace.rounds[1].state.note


def test_locked_searches_still_allow_save(searcher, corpus_en):
    settings = settings_with(round_token_budget=4000, rounds=2, max_output_tokens=64)
    script = [*[search(P, q, top_k=1) for q in FIVE_QUERIES], search(P, "the river", top_k=10),
              search(P, "the town", top_k=10), save(P, ["en_place_001_0"])]
    trace, _ = run(searcher, script, settings, text_of=corpus_en.__getitem__)
    assert len(rejected(trace, "search_locked")) == 1
    assert trace.rounds[0].ended_by == "save"


def test_round_ends_when_budget_is_spent(searcher, corpus_en):
    settings = settings_with(round_token_budget=1800, search_lock_share=1.0, max_output_tokens=64)
    trace, _ = run(searcher, [search(P, q) for q in ["Ashkel", "Vellmoor", "flood", "river", "bridge", "college"]],
                   settings, text_of=corpus_en.__getitem__)
    assert trace.rounds[0].ended_by == "budget"
    assert trace.rounds[0].tokens + 64 > 1800


def test_summary_and_goal_minimum_lengths(searcher):
    script = [*five_searches(), save(P, ["en_place_001_0"], round_summary="short", next_round_goal="find it"),
              save(P, ["en_place_001_0"])]
    trace, _ = run(searcher, script, settings_with(rounds=2))
    [turn] = rejected(trace, "summary_too_short")
    assert turn.rejection.split(",") == ["summary_too_short", "goal_too_short"]
    assert "at least 50" in turn.message and "at least 30" in turn.message


def test_saved_soft_cap_warns_and_keeps(searcher):
    settings = settings_with(saved_soft_cap=2, rounds=2)
    ids = ["en_place_001_0", "en_river_ashkel_0", "en_org_avi_0"]
    trace, _ = run(searcher, [*five_searches(), save(P, ids)], settings)
    save_turn = trace.turns[5]
    assert not save_turn.rejected and "above the soft cap of 2" in save_turn.warnings[0]
    assert [s.chunk_id for s in trace.rounds[1].state.saved] == ids
    assert "soft cap" in trace.rounds[1].state.note


def test_drop_from_saved_must_name_saved_chunks_and_removes_them(searcher):
    script = [*five_searches(), save(P, ["en_place_001_0", "en_river_ashkel_0"]),
              *[search(P, q) for q in ["bridge", "college", "island", "lake", "flood"]],
              save(P, ["en_org_avi_0"], drop_from_saved=["en_person_fenn_0"]),
              save(P, ["en_org_avi_0"], drop_from_saved=["en_place_001_0"])]
    trace, _ = run(searcher, script, settings_with(rounds=3))
    [turn] = rejected(trace, "drop_not_saved")
    assert "en_person_fenn_0" in turn.message
    assert [s.chunk_id for s in trace.rounds[2].state.saved] == ["en_river_ashkel_0", "en_org_avi_0"]


def test_unknown_chunk_ids_refused(searcher):
    script = [search(P, "Vellmoor"), finalize(P, ["en_place_001_0", "made_up_7"]), finalize(P, ["en_place_001_0"])]
    trace, _ = run(searcher, script)
    [turn] = rejected(trace, "unknown_chunk")
    assert "made_up_7" in turn.message


def test_no_new_chunk_warning_after_five_searches(searcher):
    script = [search(P, "Vellmoor", top_k=10)] + [search(P, q) for q in ["zzz", "qqq", "xxx", "yyy", "www"]]
    trace, _ = run(searcher, script)
    assert all(not t.warnings for t in trace.turns[:5])
    assert "5 searches in a row brought no new passage" in trace.turns[5].message


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_two_turns_without_a_tool_call_end_the_round(searcher, protocol):
    # round 2 searches again: a chunk seen in round 1 and not saved is not in its context
    script = ["Let me think.", search(protocol, "Vellmoor"), "Hmm.", "Still thinking.",
              search(protocol, "Vellmoor"), finalize(protocol, ["en_place_001_0"])]
    trace, llm = run(searcher, script, settings_with(rounds=2), protocol=protocol)
    assert trace.turns[0].rejection == "no_tool_call" and "You did not call a tool" in llm.requests[1].messages[-1].content
    # a tool call in between resets the count; two in a row end the round
    assert trace.rounds[0].ended_by == "no_tool_calls" and trace.rounds[0].turns == 4
    assert "2 turns without a tool call" in trace.rounds[1].state.note
    assert trace.finalized_by == "model"


def test_round_ends_after_max_turns(searcher):
    settings = settings_with(max_turns_per_round=3, rounds=2)
    script = [search(P, q) for q in ["a1", "b2", "c3", "d4"]]
    trace, _ = run(searcher, script, settings)
    assert trace.rounds[0].ended_by == "max_turns" and trace.rounds[0].turns == 3
    assert trace.turns[3].round_no == 2


def test_failed_search_retried_three_times(searcher):
    class Flaky:
        name = "flaky"

        def __init__(self, failures):
            self.failures, self.calls = failures, 0

        def search(self, query, k=10):
            self.calls += 1
            if self.calls <= self.failures:
                raise OSError("index file busy")
            return searcher.search(query, k)

    recovering = Flaky(3)
    trace, _ = run(recovering, [search(P, "Vellmoor")])
    assert recovering.calls == 4 and not trace.turns[0].rejected and trace.turns[0].results

    broken = Flaky(100)
    trace, _ = run(broken, [search(P, "Vellmoor"), finalize(P, ["en_place_001_0"])])
    assert broken.calls == 4
    assert trace.turns[0].rejection == "search_failed" and "failed 4 times" in trace.turns[0].message
    assert trace.searches == 0
    assert trace.turns[1].rejection == "unknown_chunk"  # nothing was shown, so nothing can be ranked


def test_short_final_ranking_accepted_with_warning(searcher):
    trace, _ = run(searcher, [search(P, "Vellmoor"), finalize(P, ["en_place_001_0"])])
    assert trace.finalized_by == "model" and [r.chunk_id for r in trace.ranking] == ["en_place_001_0"]
    assert "only 1 chunk(s)" in trace.turns[1].warnings[0]


def test_long_final_ranking_cut_to_ten(searcher):
    ids = [h.chunk_id for h in searcher.search("the of and in a", 12)]
    trace, _ = run(searcher, [search(P, "the of and in a", top_k=10), search(P, "river town lake", top_k=10),
                              finalize(P, ids + [c for c in [h.chunk_id for h in searcher.search("river town lake", 10)] if c not in ids])])
    assert len(trace.ranking) == 10 and "only the first 10" in trace.turns[-1].warnings[0]


@pytest.mark.parametrize("reply,code", [
    ('{"action": "search_corpus", "arguments": {"query": "Vellm', "parse_error"),
    ({"action": "browse_web", "arguments": {"url": "x"}}, "unknown_tool"),
    ({"action": "search_corpus", "arguments": {"top_k": 3}}, "bad_arguments"),
])
def test_invalid_json_actions_answered_with_error(searcher, reply, code):
    trace, llm = run(searcher, [reply, search(P, "Vellmoor"), finalize(P, ["en_place_001_0"])])
    assert trace.turns[0].rejected and trace.turns[0].rejection == code
    assert llm.requests[1].messages[-1].content.startswith(("Error:", "[browse_web] Error:", "[search_corpus] Error:"))
    assert trace.finalized_by == "model"


def test_bad_tool_arguments_in_tools_protocol(searcher):
    bad = LLMResponse(tool_calls=[ToolCall(id="c1", name="search_corpus", arguments='{"query": ')])
    trace, llm = run(searcher, [bad, search("tools", "Vellmoor")], protocol="tools")
    assert trace.turns[0].rejection == "bad_arguments" and "not valid JSON" in trace.turns[0].message
    reply = llm.requests[1].messages[-1]
    assert reply.role == "tool" and reply.tool_call_id == "c1"
    assert trace.turns[1].results


def test_parallel_tool_calls_each_run_and_count(searcher):
    # replaces test_one_tool_call_per_turn, which locked in a deviation: the released harness
    # runs every call of a turn ("issue multiple search_corpus tool calls in one assistant turn")
    two = LLMResponse(tool_calls=[
        ToolCall(id="a", name="search_corpus", arguments='{"query": "Vellmoor"}'),
        ToolCall(id="b", name="search_corpus", arguments='{"query": "Dunmere"}'),
    ])
    trace, llm = run(searcher, [two], protocol="tools")
    replies = llm.requests[1].messages[-2:]
    assert [m.tool_call_id for m in replies] == ["a", "b"]
    assert all(m.content.startswith("Results for") for m in replies)
    assert trace.queries == ["Vellmoor", "Dunmere"] and trace.rounds[0].searches == 2
    assert trace.turns[0].action == "search_corpus,search_corpus" and not trace.turns[0].rejected


def test_top_k_clamped_to_profile_maximum(searcher):
    trace, _ = run(searcher, [search(P, "the river", top_k=50)])
    assert len(trace.turns[0].results) == 10 and "between 1 and 10" in trace.turns[0].warnings[0]


def test_token_estimate_is_chars_over_four_where_the_backend_reports_none(searcher):
    llm = make_llm("json", [search(P, "Vellmoor")])
    trace = run_with(searcher, SilentTokens(llm))
    first = llm.requests[0]
    start = sum(len(m.content) / 4 + 4 for m in first.messages)
    turn = trace.turns[0]
    assert turn.tokens_in == 0
    # within rounding of one token per message
    added = sum(len(m.content or "") / 4 + 4 for m in [turn.assistant, *turn.replies])
    assert abs(turn.round_tokens - start - added) <= 4
