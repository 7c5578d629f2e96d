"""Traces: every request rebuilds byte for byte, rounds replay from state, the store round-trips."""

from __future__ import annotations

import pytest

from agentkit import FIVE_QUERIES, finalize, make_llm, save, search, settings_with, several
from factory.agent import SearchAgent, load_episode, replay_messages, replay_request, replay_round_context


def messy_script(p: str) -> list:
    return [
        search(p, "Vellmoor"),
        "thinking out loud",
        save(p, ["en_place_001_0"]),  # refused: too few searches
        *[search(p, q) for q in FIVE_QUERIES[1:]],
        search(p, "vellmoor "),  # refused: repeated
        save(p, ["en_place_001_0", "en_org_avi_0"]),
        search(p, "Great Ashkel Flood"),
        finalize(p, ["en_event_flood_1891_0", "en_place_001_0", "en_org_avi_0"]),
    ]


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_every_request_rebuilds_exactly(searcher, corpus_en, protocol):
    llm = make_llm(protocol, messy_script(protocol))
    agent = SearchAgent(searcher, llm, settings_with(rounds=3), text_of=corpus_en.__getitem__)
    trace = agent.episode("Which flood destroyed the bridge built with iron from the town's works?", item_id="x")
    assert len(trace.turns) == len(llm.requests) == 11
    assert trace.rejections == 2
    for turn, sent in zip(trace.turns, llm.requests):
        rebuilt = replay_request(trace, turn.turn_no)
        assert rebuilt == sent
        assert rebuilt.canonical() == sent.canonical()  # byte for byte as the gateway hashes it


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_round_context_replays_from_state(searcher, corpus_en, protocol):
    llm = make_llm(protocol, messy_script(protocol))
    trace = SearchAgent(searcher, llm, settings_with(rounds=3), text_of=corpus_en.__getitem__).episode("Q?")
    assert [r.round_no for r in trace.rounds] == [1, 2]
    first_turn_of = {r: next(t.turn_no for t in trace.turns if t.round_no == r) for r in (1, 2)}
    for round_no, turn_no in first_turn_of.items():
        context = replay_round_context(trace, round_no)
        assert context == llm.requests[turn_no - 1].messages
        assert context == trace.rounds[round_no - 1].start_messages
    # round 2's state carries the saved evidence with reasons and the passage text
    state = trace.rounds[1].state
    assert [s.chunk_id for s in state.saved] == ["en_place_001_0", "en_org_avi_0"]
    assert state.saved[1].text == corpus_en["en_org_avi_0"]
    with pytest.raises(KeyError):
        replay_round_context(trace, 3)


def test_trace_records_queries_results_saves_and_rejections(searcher):
    llm = make_llm("json", messy_script("json"))
    trace = SearchAgent(searcher, llm, settings_with(rounds=3)).episode("Q?")
    refused = [(t.turn_no, t.action, t.rejection) for t in trace.turns if t.rejected]
    assert refused == [(3, "save_and_advance", "save_too_few_searches"), (8, "search_corpus", "query_repeated")]
    prose = trace.turns[1]
    assert prose.action == "none" and prose.rejection == "no_tool_call" and not prose.rejected
    first = trace.turns[0]
    assert first.query == "Vellmoor" and first.results[0].chunk_id == "en_place_001_0"
    assert first.new_chunk_ids == [h.chunk_id for h in first.results]
    save_turn = trace.turns[8]
    assert save_turn.action == "save_and_advance" and save_turn.arguments["covered_concepts"] == ["town"]
    assert trace.seen[: len(first.results)] == [h.chunk_id for h in first.results]


def test_store_round_trip(store, searcher):
    llm = make_llm("tools", messy_script("tools"))
    agent = SearchAgent(searcher, llm, settings_with(rounds=3), store=store, stage="eval", run_id="r1")
    trace = agent.episode("Q?", item_id="q-9")
    loaded = load_episode(store, trace.episode_id)
    assert loaded == trace
    for turn in trace.turns:
        assert replay_messages(loaded, turn.turn_no) == llm.requests[turn.turn_no - 1].messages
    rows = store.query(
        "SELECT turn_no, round_no, action, rejected, rejection FROM agent_turns WHERE episode_id = ? ORDER BY turn_no",
        [trace.episode_id],
    )
    assert len(rows) == 11 and sum(r["rejected"] for r in rows) == 2
    episode = store.query("SELECT stage, item_id, profile, protocol, finalized_by, searches FROM agent_episodes")
    assert episode == [{"stage": "eval", "item_id": "q-9", "profile": "standard", "protocol": "tools",
                        "finalized_by": "model", "searches": 6}]
    assert store.scalar("SELECT count(*) FROM agent_rounds WHERE episode_id = ?", [trace.episode_id]) == 2


def test_episodes_given_a_writer_wait_for_its_owner_and_land_turns_first(store, searcher):
    """A generation run hands the agent its candidates' writer: episodes are written at the
    candidate's checkpoint, in the tables' first-used order, so turns land before episodes."""
    writer = store.writer("generate-r1", flush_seconds=3600)
    agent = SearchAgent(searcher, make_llm("tools", messy_script("tools") * 2), settings_with(rounds=3), store=store,
                        writer=writer, stage="agent_run")
    first, second = agent.episode("Q?", item_id="c-1"), agent.episode("Q again?", item_id="c-1")
    assert store.segments("agent_episodes") == [] and store.segments("agent_turns") == []
    writer.flush()
    assert [len(store.segments(t)) for t in ("agent_turns", "agent_rounds", "agent_episodes")] == [1, 1, 1]
    turns_at, episodes_at = (store.segments(t)[0].stat().st_mtime_ns for t in ("agent_turns", "agent_episodes"))
    assert turns_at <= episodes_at
    assert load_episode(store, first.episode_id) == first and load_episode(store, second.episode_id) == second
    writer.close()


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_a_turn_with_several_calls_replays_and_round_trips(store, searcher, protocol):
    script = [
        several(protocol, search(protocol, "Vellmoor"), search(protocol, "VELLMOOR"), search(protocol, "Dunmere")),
        several(protocol, finalize(protocol, ["en_place_001_0"]), search(protocol, "late")),
    ]
    llm = make_llm(protocol, script)
    trace = SearchAgent(searcher, llm, settings_with(rounds=1), store=store).episode("Q?", item_id="multi")
    first, second = trace.turns
    assert [(c.action, c.rejection) for c in first.calls] == [
        ("search_corpus", ""), ("search_corpus", "query_repeated"), ("search_corpus", "")]
    assert [(c.action, c.rejection) for c in second.calls] == [("finalize_ranking", ""), ("search_corpus", "after_round_end")]
    assert trace.rejections == 2 and trace.queries == ["Vellmoor", "Dunmere"]
    assert len(first.replies) == (3 if protocol == "tools" else 1)
    loaded = load_episode(store, trace.episode_id)
    assert loaded == trace
    for turn in trace.turns:
        assert replay_request(loaded, turn.turn_no) == llm.requests[turn.turn_no - 1]
    rows = store.query("SELECT action, rejected, rejection, query, calls FROM agent_turns WHERE episode_id = ? "
                       "ORDER BY turn_no", [trace.episode_id])
    assert rows[0]["action"] == "search_corpus,search_corpus,search_corpus" and rows[0]["rejected"]
    assert rows[0]["rejection"] == "query_repeated" and rows[0]["query"] == "Vellmoor"
    assert store.scalar("SELECT json_array_length(calls) FROM agent_turns WHERE episode_id = ? AND turn_no = 2",
                        [trace.episode_id]) == 2


def test_turns_stored_before_calls_were_kept_read_back_as_one_call(store, searcher):
    from factory.agent.trace import episode_rows

    llm = make_llm("json", messy_script("json"))
    trace = SearchAgent(searcher, llm, settings_with(rounds=3)).episode("Q?")
    rows = episode_rows(trace)
    for row in rows["agent_turns"]:  # as migration 005 wrote them
        del row["calls"], row["llm_errors"]
    store.append("agent_turns", rows["agent_turns"])
    store.append("agent_rounds", rows["agent_rounds"])
    store.append("agent_episodes", rows["agent_episodes"])
    assert load_episode(store, trace.episode_id) == trace
