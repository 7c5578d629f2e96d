"""Episode traces: what the agent saw and did, stored so anyone can replay it.

A turn's request is never stored whole (that would grow with the square of the
round's length); it is rebuilt byte for byte from the round's start messages and the
earlier turns' assistant messages and harness replies (``replay_request``). A round's
start is rebuilt from its carried state alone (``replay_round_context``), which is
what a trainer slicing episodes by round needs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from factory.agent.prompts import round_messages
from factory.agent.state import RoundState, SavedChunk
from factory.llm.types import LLMRequest, Message, Sampling, ToolSpec
from factory.settings import AgentLimits
from factory.store import json_value
from factory.store.store import SegmentWriter


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RankedChunk(_Model):
    chunk_id: str
    reason: str = ""
    score: float = 0.0


class ShownHit(_Model):
    chunk_id: str
    score: float
    rank: int


class CallTrace(_Model):
    """One tool call of a turn (or the turn's lack of one) and the harness's answer to it."""

    call_id: str | None = Field(None, description="the tool call's id (tools protocol); None for JSON actions")
    action: str = Field("none", description="a tool name, none (no call in the reply) or invalid (unparsable)")
    arguments: Any = None
    rejected: bool = False
    rejection: str = Field("", description="reason code(s), comma-separated, e.g. save_too_few_searches")
    message: str = Field("", description="what the harness answered: results or an error it can act on")
    warnings: list[str] = Field(default_factory=list)
    query: str | None = None
    results: list[ShownHit] = Field(default_factory=list)
    new_chunk_ids: list[str] = Field(default_factory=list, description="results never seen before in the episode")


class TurnTrace(_Model):
    """One model turn: its reply (with any number of tool calls) and what the harness did with each call.

    The summary properties (``action``, ``rejected``, ``query``, ...) read a one-call
    turn as before; a turn with several calls joins or concatenates them in call order.
    """

    round_no: int
    turn_no: int
    turn_in_round: int
    calls: list[CallTrace] = Field(default_factory=list)
    assistant: Message | None = None
    replies: list[Message] = Field(default_factory=list)
    tokens_in: int = Field(0, description="prompt tokens as the backend reported them (0: it did not)")
    tokens_out: int = 0
    round_tokens: int = Field(0, description="the round's context after this turn: reported prompt plus estimates")
    latency_s: float = 0.0
    llm_error: str | None = Field(None, description="the model call failed on every try")
    llm_errors: list[str] = Field(default_factory=list, description="the failed tries of this turn's model call")

    @property
    def action(self) -> str:
        return ",".join(c.action for c in self.calls) or "none"

    @property
    def arguments(self) -> Any:
        if len(self.calls) == 1:
            return self.calls[0].arguments
        return [c.arguments for c in self.calls] or None

    @property
    def rejected(self) -> bool:
        return any(c.rejected for c in self.calls)

    @property
    def rejection(self) -> str:
        return ",".join(c.rejection for c in self.calls if c.rejection)

    @property
    def message(self) -> str:
        return "\n\n".join(c.message for c in self.calls if c.message)

    @property
    def warnings(self) -> list[str]:
        return [w for c in self.calls for w in c.warnings]

    @property
    def queries(self) -> list[str]:
        """The searches this turn ran, in call order."""
        return [c.query for c in self.calls if c.action == "search_corpus" and not c.rejected and c.query]

    @property
    def query(self) -> str | None:
        return next((c.query for c in self.calls if c.query), None)

    @property
    def results(self) -> list[ShownHit]:
        return [h for c in self.calls for h in c.results]

    @property
    def new_chunk_ids(self) -> list[str]:
        return [h for c in self.calls for h in c.new_chunk_ids]


class RoundTrace(_Model):
    round_no: int
    state: RoundState
    start_messages: list[Message]
    ended_by: str = ""
    searches: int = 0
    turns: int = 0
    tokens: int = 0


class EpisodeConfig(_Model):
    """Everything besides the messages that went into each request."""

    limits: AgentLimits
    context_window: int = Field(0, description="the window the limits were fitted to (0: recorded before it was kept)")
    window_source: str = Field("", description="backend (it reported the window) | settings (it did not)")
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: str | None = None
    output_schema: dict[str, Any] | None = None
    schema_name: str | None = None
    sampling: Sampling
    seed: int = 0
    sample_index: int = 0


class EpisodeTrace(_Model):
    episode_id: str
    item_id: str = ""
    stage: str = "agent"
    rollout: int = 0
    question: str
    lang: str = "en"
    profile: str = "standard"
    protocol: str = "json"
    llm: str = ""
    model: str = ""
    config: EpisodeConfig
    rounds: list[RoundTrace] = Field(default_factory=list)
    turns: list[TurnTrace] = Field(default_factory=list)
    ranking: list[RankedChunk] = Field(default_factory=list)
    finalized_by: str = ""
    seen: list[str] = Field(default_factory=list)
    saved: list[SavedChunk] = Field(default_factory=list)
    covered: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    searches: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    elapsed_s: float = 0.0
    error: str | None = None
    run_id: str = ""
    started_at: datetime | None = None

    @property
    def queries(self) -> list[str]:
        return [q for t in self.turns for q in t.queries]

    @property
    def rejections(self) -> int:
        """Refused calls (a turn with two refused calls counts two)."""
        return sum(c.rejected for t in self.turns for c in t.calls)

    @property
    def outcome(self) -> str:
        """How the episode ended: finalized (the model's ranking), fallback (the harness
        ranked saved then seen chunks) or error (the model call failed on every try)."""
        if self.error:
            return "error"
        return "finalized" if self.finalized_by == "model" else "fallback"

    def round_turns(self, round_no: int) -> list[TurnTrace]:
        return [t for t in self.turns if t.round_no == round_no]


class AgentResult(_Model):
    """One question's outcome: the fused ranking and every rollout's episode."""

    question: str
    item_id: str = ""
    ranking: list[RankedChunk]
    episodes: list[EpisodeTrace]

    @property
    def chunk_ids(self) -> list[str]:
        return [r.chunk_id for r in self.ranking]

    @property
    def trajectory(self) -> list[str]:
        """Every unique result any rollout saw, in order of first appearance."""
        seen: dict[str, None] = {}
        for episode in self.episodes:
            seen.update(dict.fromkeys(episode.seen))
        return list(seen)


# ------------------------------------------------------------------ replay
def replay_round_context(episode_trace: EpisodeTrace, round_no: int) -> list[Message]:
    """The messages the model saw at the start of round ``round_no``, rebuilt from state."""
    for round_ in episode_trace.rounds:
        if round_.round_no == round_no:
            return round_messages(
                episode_trace.lang, episode_trace.config.limits, episode_trace.protocol,
                episode_trace.question, round_.state,
            )
    raise KeyError(f"episode {episode_trace.episode_id} has no round {round_no}")


def replay_messages(episode_trace: EpisodeTrace, turn_no: int) -> list[Message]:
    """The exact message list sent at turn ``turn_no`` (1-based within the episode)."""
    turn = next((t for t in episode_trace.turns if t.turn_no == turn_no), None)
    if turn is None:
        raise KeyError(f"episode {episode_trace.episode_id} has no turn {turn_no}")
    round_ = next(r for r in episode_trace.rounds if r.round_no == turn.round_no)
    messages = list(round_.start_messages)
    for earlier in episode_trace.round_turns(turn.round_no):
        if earlier.turn_in_round >= turn.turn_in_round:
            break
        if earlier.assistant is not None:
            messages.append(earlier.assistant)
        messages.extend(earlier.replies)
    return messages


def replay_request(episode_trace: EpisodeTrace, turn_no: int) -> LLMRequest:
    config = episode_trace.config
    return LLMRequest(
        messages=replay_messages(episode_trace, turn_no),
        tools=config.tools,
        tool_choice=config.tool_choice,
        output_schema=config.output_schema,
        schema_name=config.schema_name,
        sampling=config.sampling,
        seed=config.seed,
        sample_index=config.sample_index,
    )


# ------------------------------------------------------------------- store
def _dump(items: list[BaseModel]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json") for item in items]


def episode_rows(trace: EpisodeTrace) -> dict[str, list[dict[str, Any]]]:
    episode = {
        "episode_id": trace.episode_id,
        "item_id": trace.item_id,
        "stage": trace.stage,
        "rollout": trace.rollout,
        "question": trace.question,
        "lang": trace.lang,
        "profile": trace.profile,
        "protocol": trace.protocol,
        "llm": trace.llm,
        "model": trace.model,
        "config": trace.config.model_dump(mode="json"),
        "ranking": _dump(trace.ranking),
        "finalized_by": trace.finalized_by,
        "rounds": len(trace.rounds),
        "turns": len(trace.turns),
        "searches": trace.searches,
        "rejections": trace.rejections,
        "seen_chunk_ids": trace.seen,
        "saved": _dump(trace.saved),
        "covered": trace.covered,
        "unresolved": trace.unresolved,
        "warnings": trace.warnings,
        "tokens_in": trace.tokens_in,
        "tokens_out": trace.tokens_out,
        "elapsed_s": trace.elapsed_s,
        "error": trace.error,
        "run_id": trace.run_id,
        "started_at": trace.started_at,
    }
    rounds = [
        {
            "episode_id": trace.episode_id,
            "round_no": r.round_no,
            "state": r.state.model_dump(mode="json"),
            "start_messages": _dump(r.start_messages),
            "ended_by": r.ended_by,
            "searches": r.searches,
            "turns": r.turns,
            "tokens": r.tokens,
        }
        for r in trace.rounds
    ]
    turns = []
    for t in trace.turns:
        row = t.model_dump(mode="json")
        row["episode_id"] = trace.episode_id
        # the turn as a whole, for SQL readers; the calls one by one in `calls`
        row.update(action=t.action, arguments=t.arguments, rejected=t.rejected, rejection=t.rejection,
                   message=t.message, warnings=t.warnings, query=t.query,
                   results=[h.model_dump(mode="json") for h in t.results], new_chunk_ids=t.new_chunk_ids)
        turns.append(row)
    return {"agent_episodes": [episode], "agent_rounds": rounds, "agent_turns": turns}


def write_episode(target: Any, trace: EpisodeTrace) -> None:
    """Write one episode's rows, turns and rounds first (a reader that finds the episode row
    finds its turns too): to a store, flushed at once, or appended to a writer whose owner
    flushes it (its tables flush in the order first used, so turns still land first)."""
    rows = episode_rows(trace)
    if isinstance(target, SegmentWriter):
        for table in ("agent_turns", "agent_rounds", "agent_episodes"):
            target.append(table, rows[table])
        return
    with target.writer("agent") as writer:
        writer.append("agent_turns", rows["agent_turns"])
        writer.append("agent_rounds", rows["agent_rounds"])
        writer.flush()
        writer.append("agent_episodes", rows["agent_episodes"])


_TURN_JSON = {"arguments", "warnings", "results", "new_chunk_ids", "assistant", "replies", "calls", "llm_errors"}


def _turn(row: dict[str, Any]) -> TurnTrace:
    t = {k: (json_value(v) if k in _TURN_JSON else v) for k, v in row.items()}
    calls = t.get("calls")
    if calls is None:  # written before turns kept their calls: the turn was one call
        calls = [{k: t[k] for k in ("action", "arguments", "rejected", "rejection", "message", "warnings", "query",
                                    "results", "new_chunk_ids") if t.get(k) is not None}]
        if t.get("llm_error") and t.get("assistant") is None:
            calls = []
    fields = set(TurnTrace.model_fields) - {"calls", "llm_errors"}
    return TurnTrace.model_validate({**{k: v for k, v in t.items() if k in fields and v is not None},
                                     "calls": calls, "llm_errors": t.get("llm_errors") or []})


def trace_from_rows(e: dict[str, Any], rounds: list[dict[str, Any]], turns: list[dict[str, Any]]) -> EpisodeTrace:
    """One episode from its store rows (rounds by round_no, turns by turn_no)."""
    return EpisodeTrace(
        episode_id=e["episode_id"],
        item_id=e["item_id"] or "",
        stage=e["stage"] or "",
        rollout=e["rollout"] or 0,
        question=e["question"],
        lang=e["lang"],
        profile=e["profile"],
        protocol=e["protocol"],
        llm=e["llm"] or "",
        model=e["model"] or "",
        config=EpisodeConfig.model_validate(json_value(e["config"])),
        rounds=[
            RoundTrace(
                round_no=r["round_no"],
                state=RoundState.model_validate(json_value(r["state"])),
                start_messages=[Message.model_validate(m) for m in json_value(r["start_messages"])],
                ended_by=r["ended_by"] or "",
                searches=r["searches"] or 0,
                turns=r["turns"] or 0,
                tokens=r["tokens"] or 0,
            )
            for r in rounds
        ],
        turns=[_turn(t) for t in turns],
        ranking=[RankedChunk.model_validate(r) for r in json_value(e["ranking"]) or []],
        finalized_by=e["finalized_by"] or "",
        seen=json_value(e["seen_chunk_ids"]) or [],
        saved=[SavedChunk.model_validate(s) for s in json_value(e["saved"]) or []],
        covered=json_value(e["covered"]) or [],
        unresolved=json_value(e["unresolved"]) or [],
        warnings=json_value(e["warnings"]) or [],
        searches=e["searches"] or 0,
        tokens_in=e["tokens_in"] or 0,
        tokens_out=e["tokens_out"] or 0,
        elapsed_s=e["elapsed_s"] or 0.0,
        error=e["error"],
        run_id=e["run_id"] or "",
        started_at=e["started_at"],
    )


def load_episode(store: Any, episode_id: str) -> EpisodeTrace:
    """Rebuild an EpisodeTrace from the store's three agent tables."""
    found = store.query("SELECT * FROM agent_episodes WHERE episode_id = ?", [episode_id])
    if not found:
        raise KeyError(f"no agent episode {episode_id!r} in {getattr(store, 'root', store)}")
    rounds = store.query("SELECT * FROM agent_rounds WHERE episode_id = ? ORDER BY round_no", [episode_id])
    turns = store.query("SELECT * FROM agent_turns WHERE episode_id = ? ORDER BY turn_no", [episode_id])
    return trace_from_rows(found[0], rounds, turns)
