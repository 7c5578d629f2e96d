"""What an episode knows: carried across rounds (RoundState) and kept within one round.

``RoundState`` is exactly what a fresh round's context is rendered from, so a round
can be replayed from it alone; everything else (queries, results seen, counters)
lives in ``EpisodeState`` and never reaches the model except through tool results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field


class SavedChunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    reason: str
    text: str = Field("", description="the passage (shown at a round's start up to the snippet cap)")


class RoundState(BaseModel):
    """The carried state a round starts from."""

    model_config = ConfigDict(extra="forbid")

    round_no: int
    rounds: int
    saved: list[SavedChunk] = Field(default_factory=list)
    covered: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    summary: str = ""
    goal: str = ""
    note: str = Field("", description="what the harness tells the round (why the last one ended, soft-cap warnings)")

    @property
    def is_last(self) -> bool:
        return self.round_no >= self.rounds


def normalize_query(query: str) -> str:
    """Queries that differ only in case or whitespace are the same query."""
    return re.sub(r"\s+", " ", query).strip().casefold()


def normalize_concept(concept: str) -> str:
    return re.sub(r"\s+", " ", concept).strip().casefold()


@dataclass
class EpisodeState:
    question: str
    rounds: int
    round_no: int = 1
    saved: dict[str, SavedChunk] = field(default_factory=dict)  # insertion order = save order
    covered: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    summary: str = ""
    goal: str = ""
    note: str = ""
    seen: dict[str, str] = field(default_factory=dict)  # chunk id -> the query that first showed it
    queries: list[str] = field(default_factory=list)  # every accepted query, in order
    episode_queries: set[str] = field(default_factory=set)
    searches: int = 0
    # per round
    round_queries: set[str] = field(default_factory=set)
    shown_this_round: set[str] = field(default_factory=set)
    round_searches: int = 0
    no_new_streak: int = 0  # searches in a row that showed nothing new this round
    no_tool_turns: int = 0
    locked_turns: int = 0
    turns_in_round: int = 0

    @property
    def is_last_round(self) -> bool:
        return self.round_no >= self.rounds

    def context_ids(self) -> set[str]:
        """The chunks in the model's current context: the saved set and this round's results."""
        return set(self.saved) | self.shown_this_round

    def round_state(self) -> RoundState:
        return RoundState(
            round_no=self.round_no,
            rounds=self.rounds,
            saved=list(self.saved.values()),
            covered=list(self.covered),
            unresolved=list(self.unresolved),
            summary=self.summary,
            goal=self.goal,
            note=self.note,
        )

    def next_round(self, note: str = "") -> None:
        self.round_no += 1
        self.note = note
        self.round_queries = set()
        self.shown_this_round = set()
        self.round_searches = 0
        self.no_new_streak = 0
        self.no_tool_turns = 0
        self.locked_turns = 0
        self.turns_in_round = 0
