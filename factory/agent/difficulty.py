"""The difficulty checker: the search agent runs on a draft against the fixed index.

A draft is too easy when, in at least ``easy_share`` of the rollouts (by default all of
them), the agent held the whole support set (``easy_min_recall``) at the end of its first
round after fewer searches than the support has passages (or at most
``easy_max_searches``, when set): some search then found two hops at once. A competent
agent that solves a two-hop question in two targeted searches did what the question
asks, which is no sign of a shortcut. The validator gauntlet turns the report into a
verdict; the queries that found the support go back to the composer as feedback.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from factory.agent.config import agent_settings
from factory.agent.loop import SearchAgent
from factory.agent.trace import EpisodeTrace
from factory.settings import AgentSettings, Settings


class RolloutFigures(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: str
    recall: float
    first_round_recall: float
    searches: int
    first_round_searches: int
    rounds: int
    finalized_by: str
    queries: list[str]
    easy: bool
    error: str | None = None


class DifficultyReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item_id: str
    rollouts: int
    recall: float = Field(description="recall of the fused final ranking")
    mean_recall: float = Field(description="mean recall of the rollouts' own rankings")
    trajectory_recall: float = Field(description="share of the support any rollout ever saw")
    first_round_recall: float = Field(description="mean over rollouts")
    searches: float = Field(description="mean searches per rollout")
    rounds: float = Field(description="mean rounds per rollout")
    easy_rollouts: int
    too_easy: bool
    feedback: str = ""
    queries: list[str] = Field(default_factory=list, description="every rollout's queries, in order")
    episode_ids: list[str] = Field(default_factory=list)
    per_rollout: list[RolloutFigures] = Field(default_factory=list)
    profile: str = ""
    protocol: str = ""
    elapsed_s: float = 0.0


def recall(found: list[str], gold: set[str]) -> float:
    return len(gold & set(found)) / len(gold) if gold else 0.0


def first_round_chunks(episode: EpisodeTrace) -> list[str]:
    """What the agent held at the end of round 1: its ranking if it finalized in
    round 1, else the evidence it saved for round 2."""
    if not episode.rounds:
        return []
    first = episode.rounds[0]
    if first.ended_by == "finalize":
        return [r.chunk_id for r in episode.ranking]
    if len(episode.rounds) > 1:
        return [s.chunk_id for s in episode.rounds[1].state.saved]
    if first.ended_by == "save":
        return [s.chunk_id for s in episode.saved]
    return []


def resolve_searcher(index: Any, kind: str) -> tuple[Any, Callable[[str], str] | None, str | None]:
    """A fixed index (``.searcher(kind)``, ``.text``) or a bare searcher."""
    if hasattr(index, "searcher") and callable(index.searcher):
        # index_text is title + text, what the index matched; plain text where absent
        text_of = getattr(index, "index_text", None) or getattr(index, "text", None)
        return index.searcher(kind), text_of, getattr(index, "lang", None)
    return index, None, None


class DifficultyChecker:
    def __init__(
        self,
        searcher: Any,
        llm: Any,
        settings: Settings | AgentSettings | None = None,
        store: Any = None,
        *,
        text_of: Callable[[str], str] | None = None,
        lang: str | None = None,
        rollouts: int | None = None,
        writer: Any = None,
    ) -> None:
        self.settings = agent_settings(settings)
        found, index_text, index_lang = resolve_searcher(searcher, self.settings.searcher)
        lang = lang or index_lang or (settings.lang if isinstance(settings, Settings) else "en")
        self.rollouts = rollouts or self.settings.difficulty_rollouts
        self.agent = SearchAgent(
            found, llm, settings, text_of=text_of or index_text, store=store, lang=lang, stage="agent_run",
            writer=writer,
        )

    def check(self, question: str, gold_chunk_ids: list[str], item_id: str) -> DifficultyReport:
        start = time.perf_counter()
        s = self.settings
        gold = set(gold_chunk_ids)
        limit = easy_search_limit(s, len(gold))
        result = self.agent.run(question, item_id=item_id, rollouts=self.rollouts)
        figures = []
        for episode in result.episodes:
            first_searches = episode.rounds[0].searches if episode.rounds else 0
            first_recall = recall(first_round_chunks(episode), gold)
            figures.append(RolloutFigures(
                episode_id=episode.episode_id,
                recall=recall([r.chunk_id for r in episode.ranking], gold),
                first_round_recall=first_recall,
                searches=episode.searches,
                first_round_searches=first_searches,
                rounds=len(episode.rounds),
                finalized_by=episode.finalized_by,
                queries=episode.queries,
                easy=first_recall >= s.easy_min_recall and first_searches <= limit,
                error=episode.error,
            ))
        n = len(figures)
        easy = sum(f.easy for f in figures)
        too_easy = n > 0 and easy / n >= s.easy_share
        report = DifficultyReport(
            item_id=item_id,
            rollouts=n,
            recall=recall(result.chunk_ids, gold),
            mean_recall=sum(f.recall for f in figures) / n,
            trajectory_recall=recall(result.trajectory, gold),
            first_round_recall=sum(f.first_round_recall for f in figures) / n,
            searches=sum(f.searches for f in figures) / n,
            rounds=sum(f.rounds for f in figures) / n,
            easy_rollouts=easy,
            too_easy=too_easy,
            queries=[q for f in figures for q in f.queries],
            episode_ids=[f.episode_id for f in figures],
            per_rollout=figures,
            profile=self.agent.profile,
            protocol=self.agent.protocol,
            elapsed_s=time.perf_counter() - start,
        )
        report.feedback = _feedback(report, limit) if too_easy else ""
        return report


def easy_search_limit(s: AgentSettings, support: int) -> int:
    """Searches at most which a first-round solve counts as easy."""
    return s.easy_max_searches if s.easy_max_searches is not None else max(0, support - 1)


def _feedback(report: DifficultyReport, limit: int) -> str:
    easy = [f for f in report.per_rollout if f.easy]
    queries = []
    for figures in easy:
        queries.extend(q for q in figures.queries if q not in queries)
    shown = "; ".join(f'"{q}"' for q in queries[:8])
    return (
        f"Too easy: in {len(easy)} of {report.rollouts} rollouts the search agent held the whole support set "
        f"after its first round, with at most {max(f.first_round_searches for f in easy)} searches "
        f"(limit {limit}). Its queries: {shown}. Make the question need a hop these queries "
        "cannot reach directly: describe the bridge entity instead of naming a searchable clue."
    )
