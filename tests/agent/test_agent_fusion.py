"""Reciprocal rank fusion, concurrent rollouts, and the difficulty checker."""

from __future__ import annotations

import threading

from agentkit import FIVE_QUERIES, RolloutPolicy, finalize, save, search, settings_with
from factory.agent import DifficultyChecker, RankedChunk, SearchAgent, reciprocal_rank_fusion
from factory.llm.fake import FakeLLM


def ranked(*ids: str) -> list[RankedChunk]:
    return [RankedChunk(chunk_id=c, reason=f"reason {c}") for c in ids]


def test_rrf_scores_by_hand():
    fused = reciprocal_rank_fusion([ranked("a", "b", "c"), ranked("b", "d"), ranked("c", "a", "a")], k=60, cut=10)
    expected = {
        "a": 1 / 61 + 1 / 62,  # the duplicate 'a' in the third ranking counts once
        "b": 1 / 62 + 1 / 61,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    assert [f.chunk_id for f in fused] == ["a", "b", "c", "d"]  # a and b tie: chunk id decides
    for item in fused:
        assert abs(item.score - expected[item.chunk_id]) < 1e-12
    assert fused[1].reason == "reason b"


def test_rrf_cut_and_single_ranking_keeps_order():
    ids = [f"c{i:02d}" for i in range(15)]
    fused = reciprocal_rank_fusion([ranked(*reversed(ids))], cut=10)
    assert [f.chunk_id for f in fused] == list(reversed(ids))[:10]
    assert reciprocal_rank_fusion([], cut=10) == []


def make_policy_llm(scripts):
    llm = FakeLLM(default=RolloutPolicy(scripts), context_tokens=131_072)
    return llm


def test_rollouts_run_concurrently_and_fuse(searcher):
    barrier = threading.Barrier(3, timeout=5)

    class Meeting:
        """A searcher whose first call in each rollout waits until all three arrive."""

        name = "meeting"

        def __init__(self):
            self.local = threading.local()

        def search(self, query, k=10):
            if not getattr(self.local, "met", False):
                self.local.met = True
                barrier.wait()  # raises BrokenBarrierError if rollouts ran one after another
            return searcher.search(query, k)

    p = "json"
    scripts = {
        0: [search(p, "Vellmoor"), finalize(p, ["en_place_001_0", "en_river_ashkel_0"])],
        1: [search(p, "Ashkel"), finalize(p, ["en_river_ashkel_0", "en_place_001_0"])],
        2: [search(p, "Ironworks"), finalize(p, ["en_org_avi_0", "en_bridge_carrow_0"])],
    }
    llm = make_policy_llm(scripts)
    agent = SearchAgent(Meeting(), llm, settings_with(concurrency=3))
    result = agent.run("Q?", item_id="q1", rollouts=3)
    assert barrier.broken is False
    assert [e.rollout for e in result.episodes] == [0, 1, 2]
    assert {r.sample_index for r in llm.requests} == {0, 1, 2}
    assert all(e.finalized_by == "model" for e in result.episodes)
    # place and river tie (1/61 + 1/62 each): chunk id decides; then avi (1/61), bridge (1/62)
    assert [r.chunk_id for r in result.ranking] == ["en_place_001_0", "en_river_ashkel_0", "en_org_avi_0", "en_bridge_carrow_0"]
    # rollout 0 is greedy, the others sample
    temps = {r.sample_index: r.sampling.temperature for r in llm.requests}
    assert temps[0] == 0.0 and temps[1] == temps[2] == agent.settings.temperature > 0
    assert set(result.trajectory) == set().union(*(e.seen for e in result.episodes))


def easy_script(p):
    return [*[search(p, q) for q in FIVE_QUERIES], finalize(p, ["en_place_001_0", "en_river_ashkel_0"])]


def hard_script(p):
    return [
        *[search(p, q) for q in FIVE_QUERIES],
        save(p, ["en_place_001_0"]),
        *[search(p, q) for q in ["Ashkel", "flood", "bridge", "college", "island"]],
        finalize(p, ["en_place_001_0", "en_river_ashkel_0"]),
    ]


def test_difficulty_by_default_a_round_one_solve_needs_fewer_searches_than_passages_to_be_easy(searcher):
    """Five targeted searches that find two passages are what a two-hop question asks for."""
    llm = make_policy_llm({0: easy_script("json"), 1: easy_script("json")})
    report = DifficultyChecker(searcher, llm, settings_with(concurrency=2)).check(
        "Q?", ["en_place_001_0", "en_river_ashkel_0"], item_id="d0")
    assert report.first_round_recall == 1.0 and report.easy_rollouts == 0 and not report.too_easy


def test_difficulty_too_easy_when_round_one_finds_everything(searcher, store):
    llm = make_policy_llm({0: easy_script("json"), 1: easy_script("json")})
    checker = DifficultyChecker(searcher, llm, settings_with(concurrency=2, easy_max_searches=5), store=store)
    report = checker.check("Q?", ["en_place_001_0", "en_river_ashkel_0"], item_id="d1")
    assert report.rollouts == 2 and report.easy_rollouts == 2 and report.too_easy
    assert report.recall == 1.0 and report.first_round_recall == 1.0 and report.rounds == 1.0
    assert report.searches == 5.0 and report.queries == FIVE_QUERIES * 2
    assert "Too easy" in report.feedback and '"Vellmoor"' in report.feedback
    assert store.scalar("SELECT count(*) FROM agent_episodes WHERE item_id = 'd1' AND stage = 'agent_run'") == 2


def test_difficulty_not_easy_when_support_needs_a_second_round(searcher):
    llm = make_policy_llm({0: hard_script("json"), 1: hard_script("json")})
    report = DifficultyChecker(searcher, llm, settings_with(concurrency=2)).check(
        "Q?", ["en_place_001_0", "en_river_ashkel_0"], item_id="d2"
    )
    assert not report.too_easy and report.easy_rollouts == 0
    assert report.first_round_recall == 0.5 and report.recall == 1.0 and report.rounds == 2.0
    assert report.feedback == ""


def test_difficulty_rules_are_configurable(searcher):
    gold = ["en_place_001_0", "en_river_ashkel_0"]
    strict = settings_with(easy_max_searches=4)  # five searches are no longer "few"
    llm = make_policy_llm({0: easy_script("json"), 1: easy_script("json")})
    assert not DifficultyChecker(searcher, llm, strict).check("Q?", gold, "d3").too_easy
    mixed = make_policy_llm({0: easy_script("json"), 1: hard_script("json")})
    report = DifficultyChecker(searcher, mixed, settings_with(easy_share=0.5, easy_max_searches=5)).check(
        "Q?", gold, "d4")
    assert report.easy_rollouts == 1 and report.too_easy
    mixed = make_policy_llm({0: easy_script("json"), 1: hard_script("json")})
    report = DifficultyChecker(searcher, mixed, settings_with(easy_share=0.75, easy_max_searches=5)).check(
        "Q?", gold, "d5")
    assert report.easy_rollouts == 1 and not report.too_easy
