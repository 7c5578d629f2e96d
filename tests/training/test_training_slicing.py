"""Round-sliced samples replay to exactly the context the agent saw; refused turns are masked."""

from __future__ import annotations

import pytest

from factory.agent import load_episode, replay_messages, replay_round_context
from factory.agent.difficulty import resolve_searcher
from factory.index.fixed import build_index, open_index
from factory.settings import Settings
from factory.store import Store
from factory.training.slicing import message_dict, message_from_dict, sample_contexts, sample_start, slice_episode
from factory.training.tasks import load_tasks
from factory.training.trajectories import load_episodes, run_teacher, stored_links
from trainkit import EN_TASKS, put_chunks, put_tasks, teacher_llm

SETTINGS = Settings(agent={"profile": "standard"}, training={"episodes_per_task": 1})


@pytest.fixture(scope="module", params=["json", "tools"])
def world(request, tmp_path_factory):
    """A store with the fixture corpus, four tasks, their teacher episodes, and the teacher's requests."""
    root = tmp_path_factory.mktemp(f"slicing-{request.param}")
    store = Store(root / "store")
    put_chunks(store)
    put_tasks(store, EN_TASKS[:4])
    build_index(store, root / "index", "en", SETTINGS, dense=None, progress=False)
    searcher, text_of, _ = resolve_searcher(open_index(root / "index", store=store), "bm25")
    llm = teacher_llm(request.param)
    tasks = load_tasks(store)
    links = run_teacher(store, tasks, searcher, llm, SETTINGS, teacher="fake:scripted", lang="en", text_of=text_of,
                        run_id="t-run")
    traces = {l.episode_id: load_episode(store, l.episode_id) for l in links}  # the agent's own loader
    return {"store": store, "llm": llm, "tasks": {t.task_id: t for t in tasks}, "links": links, "traces": traces,
            "protocol": request.param}


def test_episodes_are_stored_and_linked_to_tasks(world):
    store, links = world["store"], world["links"]
    assert sorted(l.task_id for l in links) == sorted(world["tasks"])
    assert stored_links(store) == sorted(links, key=lambda l: (l.task_id, l.teacher, l.rollout, l.episode_id))
    rows = store.query("SELECT episode_id, item_id, stage FROM agent_episodes ORDER BY item_id")
    assert {(r["item_id"], r["stage"]) for r in rows} == {(t, "training") for t in world["tasks"]}
    # the bulk loader rebuilds each trace exactly as the agent's own loader does
    bulk = load_episodes(store, [l.episode_id for l in links])
    for link in links:
        assert bulk[link.episode_id] == world["traces"][link.episode_id]


def test_each_sample_replays_to_the_context_the_agent_saw(world):
    llm = world["llm"]
    requests = list(llm.requests)  # in episode order: tasks ran one after the other
    offset = 0
    checked_rounds = checked_turns = 0
    for link in world["links"]:
        trace = world["traces"][link.episode_id]
        samples = slice_episode(trace, world["tasks"][link.task_id], link, "easy")
        assert [s["round_no"] for s in samples] == [r.round_no for r in trace.rounds]
        turns = iter(trace.turns)
        for sample in samples:
            start = sample_start(sample)
            assert start == replay_round_context(trace, sample["round_no"])
            assert start == trace.rounds[sample["round_no"] - 1].start_messages
            for context in sample_contexts(sample):
                turn = next(turns)
                assert context == replay_messages(trace, turn.turn_no)
                assert context == requests[offset + turn.turn_no - 1].messages  # what the model was actually sent
                checked_turns += 1
            checked_rounds += 1
            # the round ends with the action that closed it
            last = [m for m in sample["messages"] if m["role"] == "assistant"][-1]
            closing = trace.round_turns(sample["round_no"])[-1]
            assert message_from_dict(last) == closing.assistant
            assert sample["ending_action"] == {"save": "save", "finalize": "finalize"}.get(
                trace.rounds[sample["round_no"] - 1].ended_by, "cut")
        offset += len(trace.turns)
    assert offset == len(requests)
    assert checked_rounds >= 6 and checked_turns == len(requests)


def test_refused_turns_are_masked_and_the_recovery_kept(world):
    for link in world["links"]:
        trace = world["traces"][link.episode_id]
        first = slice_episode(trace, world["tasks"][link.task_id], link, "easy")[0]
        assistant = [m for m in first["messages"] if m["role"] == "assistant"]
        # turn 1: save_and_advance before five searches (refused); turn 2: prose, no tool call
        assert [m["weight"] for m in assistant[:2]] == [0, 0]
        assert first["mask_reasons"] == ["save_too_few_searches", "no_tool_call"]
        assert all(m["weight"] == 1 for m in assistant[2:])  # the searches and the closing action
        assert first["masked_turns"] == 2
        refused = [t for t in trace.round_turns(1) if t.rejected]
        assert len(refused) == 1 and refused[0].rejection == "save_too_few_searches"
        # the harness's error text stays in the context after the masked turn
        after = first["messages"][first["messages"].index(assistant[0]) + 1]
        assert "at least 5 searches" in after["content"]


def test_samples_carry_state_recall_and_flags(world):
    for link in world["links"]:
        trace = world["traces"][link.episode_id]
        task = world["tasks"][link.task_id]
        gold = set(task.support_chunk_ids)
        expected = len(gold & {r.chunk_id for r in trace.ranking}) / len(gold)
        assert link.recall == pytest.approx(expected)
        assert link.low_recall == (expected < SETTINGS.training.low_recall)
        for sample in slice_episode(trace, task, link, "medium"):
            assert sample["final_recall"] == link.recall and sample["low_recall"] == link.low_recall
            state = trace.rounds[sample["round_no"] - 1].state
            assert sample["state"] == state.model_dump(mode="json")
            held = gold & {s.chunk_id for s in state.saved}
            assert sample["completeness"] == ("complete" if held == gold else "partial" if held else "none")
            assert [t["function"]["name"] for t in sample["tools"]] == ["search_corpus", "save_and_advance",
                                                                        "finalize_ranking"]
            if world["protocol"] == "tools":
                calls = [m for m in sample["messages"] if m.get("tool_calls")]
                assert calls and all(c["tool_calls"][0]["type"] == "function" for c in calls)
                replies = [m for m in sample["messages"] if m["role"] == "tool"]
                assert all(r["tool_call_id"] for r in replies)


def test_message_layout_round_trips(world):
    trace = world["traces"][world["links"][0].episode_id]
    for turn in trace.turns:
        for message in [turn.assistant, *turn.replies]:
            if message is not None:
                assert message_from_dict(message_dict(message)) == message


def test_verify_samples_passes_and_catches_tampering(world):
    from factory.training.verify import verify_samples

    samples = [s for l in world["links"]
               for s in slice_episode(world["traces"][l.episode_id], world["tasks"][l.task_id], l, "easy")]
    report = verify_samples(world["store"], samples)
    assert report.ok, report.problems
    assert report.rounds_replayed == len(samples) and report.turns_replayed == len(world["llm"].requests)
    assert report.masked_turns == report.refused_turns_in_traces == 2 * len(world["links"])
    bad = [dict(s, messages=[dict(m) for m in s["messages"]]) for s in samples[:2]]
    bad[0]["messages"][1]["content"] += " (edited)"
    next(m for m in bad[1]["messages"] if m["role"] == "assistant")["weight"] = 1
    problems = verify_samples(world["store"], bad).problems
    assert any("opening messages differ" in p for p in problems)
    assert any("weight 1, refused True" in p for p in problems)


@pytest.mark.parametrize("protocol", ["json", "tools"])
def test_a_turn_with_several_calls_masks_each_refused_call_on_its_own(tmp_path, protocol):
    import json as jsonlib

    from factory.agent import SearchAgent
    from factory.llm.fake import FakeLLM
    from factory.llm.types import LLMResponse, ToolCall
    from factory.training.trajectories import link_for
    from factory.training.verify import verify_samples

    def turn(*actions):
        if protocol == "json":
            return LLMResponse(text=jsonlib.dumps([{"action": n, "arguments": a} for n, a in actions]))
        return LLMResponse(tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=jsonlib.dumps(a))
                                       for i, (n, a) in enumerate(actions)])

    store = Store(tmp_path / "store")
    put_chunks(store)
    build_index(store, tmp_path / "index", "en", SETTINGS, dense=None, progress=False)
    searcher, text_of, _ = resolve_searcher(open_index(tmp_path / "index", store=store), "bm25")
    reason = "it names the bridge that the flood destroyed"
    script = [
        turn(("search_corpus", {"query": "Carrow Bridge"}), ("search_corpus", {"query": "carrow  bridge"}),
             ("search_corpus", {"query": "flood 1891"})),
        turn(("finalize_ranking", {"ranking": [{"chunk_id": "en_bridge_carrow_0", "reason": reason}],
                                   "covered_concepts": ["bridge"]}),
             ("search_corpus", {"query": "too late"})),
    ]
    llm = FakeLLM(script=script, context_tokens=131_072)
    llm.supports_tools = protocol == "tools"
    agent = SearchAgent(searcher, llm, SETTINGS, text_of=text_of, store=store, lang="en", stage="training")
    trace = agent.episode("Which flood destroyed the Carrow Bridge?", item_id="t02")
    assert trace.outcome == "finalized" and trace.rejections == 2
    task = next(t for t in load_tasks_from(EN_TASKS) if t.task_id == "t02")
    [sample] = slice_episode(trace, task, link_for(trace, task, "fake:scripted", 0.5), "easy")
    assistant = [m for m in sample["messages"] if m["role"] == "assistant"]
    assert [m["weight"] for m in assistant] == [0, 0]  # each turn holds a refused call
    assert [m["call_weights"] for m in assistant] == [[1, 0, 1], [1, 0]]
    assert sample["mask_reasons"] == ["query_repeated", "after_round_end"]
    report = verify_samples(store, [sample])
    assert report.ok, report.problems
    tampered = jsonlib.loads(jsonlib.dumps(sample))
    next(m for m in tampered["messages"] if m["role"] == "assistant")["call_weights"] = [1, 1, 1]
    assert any("call weights [1, 1, 1]" in p for p in verify_samples(store, [tampered]).problems)


def load_tasks_from(rows):
    from factory.training.tasks import TrainingTask

    return [TrainingTask(**{k: r[k] for k in ("task_id", "lang", "question", "support_chunk_ids", "mechanic", "cell")})
            for r in rows]
