"""The search agent: a bounded multi-round ReAct loop over a fixed index.

Entry points: ``SearchAgent(searcher, llm, settings).run(question)`` (fused ranking
of several rollouts), ``DifficultyChecker(...).check(question, gold, item_id)``,
``replay_round_context(trace, round_no)`` and ``load_episode(store, episode_id)``.
"""

from factory.agent.difficulty import DifficultyChecker, DifficultyReport
from factory.agent.fusion import reciprocal_rank_fusion
from factory.agent.loop import SearchAgent
from factory.agent.tools import action_schema, tool_specs
from factory.agent.trace import (
    AgentResult, EpisodeTrace, RankedChunk, load_episode, replay_messages, replay_request, replay_round_context,
    write_episode,
)

__all__ = [
    "AgentResult", "DifficultyChecker", "DifficultyReport", "EpisodeTrace", "RankedChunk", "SearchAgent",
    "action_schema", "load_episode", "reciprocal_rank_fusion", "replay_messages", "replay_request",
    "replay_round_context", "tool_specs", "write_episode",
]
