"""Check exported SFT samples against the stored traces (and, where logged, the LLM calls).

For every round-sliced sample: its opening messages must equal the agent's replay of
that round's context (``replay_round_context``) and the stored start messages; the
messages before each assistant turn must equal the replayed request of that turn
(``replay_messages``) and, when the gateway logged the call, the messages it actually
sent; and the weight of each assistant message must be 0 exactly for the turns the
harness refused (and, for a turn with several calls, each call's weight 0 exactly for
the calls it refused).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from factory.agent.trace import replay_messages, replay_request, replay_round_context
from factory.llm.types import Message
from factory.training.slicing import call_weights, masked, sample_contexts, sample_start
from factory.training.trajectories import load_episodes


class VerifyReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    samples: int = 0
    rounds_replayed: int = 0
    turns_replayed: int = 0
    turns_matched_to_logged_calls: int = 0
    masked_turns: int = 0
    refused_turns_in_traces: int = 0
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _logged_requests(store: Any, keys: list[str]) -> dict[str, list[Message]]:
    if not keys:
        return {}
    rows = store.query("SELECT request_key, request FROM llm_calls WHERE request_key IN (SELECT unnest(?))", [keys])
    out = {}
    for row in rows:
        request = json.loads(row["request"]) if isinstance(row["request"], str) else row["request"]
        out.setdefault(row["request_key"], [Message.model_validate(m) for m in request.get("messages", [])])
    return out


def verify_samples(store: Any, samples: list[dict[str, Any]]) -> VerifyReport:
    report = VerifyReport(samples=len(samples))
    traces = load_episodes(store, sorted({s["episode_id"] for s in samples}))
    pending: list[tuple[str, str, list[Message]]] = []  # (sample id, request key, context)
    counted: set[str] = set()
    for sample in samples:
        sid = sample["sample_id"]
        trace = traces.get(sample["episode_id"])
        if trace is None:
            report.problems.append(f"{sid}: episode {sample['episode_id']} is not in the store")
            continue
        round_no = sample["round_no"]
        start = sample_start(sample)
        if start != replay_round_context(trace, round_no) or start != trace.rounds[round_no - 1].start_messages:
            report.problems.append(f"{sid}: the opening messages differ from the replayed round context")
        report.rounds_replayed += 1
        turns = [t for t in trace.round_turns(round_no) if t.assistant is not None]
        contexts = sample_contexts(sample)
        assistants = [m for m in sample["messages"] if m["role"] == "assistant"]
        weights = [m.get("weight") for m in assistants]
        if len(contexts) != len(turns):
            report.problems.append(f"{sid}: {len(contexts)} assistant turns, the trace has {len(turns)}")
            continue
        for turn, context, weight, message in zip(turns, contexts, weights, assistants):
            if context != replay_messages(trace, turn.turn_no):
                report.problems.append(f"{sid}: turn {turn.turn_no}: context differs from the replayed request")
            report.turns_replayed += 1
            should_mask = bool(masked(turn))
            if (weight == 0) != should_mask:
                report.problems.append(f"{sid}: turn {turn.turn_no}: weight {weight}, refused {should_mask}")
            expected = call_weights(turn) if len(turn.calls) > 1 else None
            if message.get("call_weights") != expected:
                report.problems.append(
                    f"{sid}: turn {turn.turn_no}: call weights {message.get('call_weights')}, refused calls give {expected}"
                )
            report.masked_turns += weight == 0
            if sample.get("copy", 0) == 0 and f"{trace.episode_id}:{turn.turn_no}" not in counted:
                counted.add(f"{trace.episode_id}:{turn.turn_no}")
                report.refused_turns_in_traces += should_mask
            pending.append((sid, replay_request(trace, turn.turn_no).key(trace.model), context))
    logged = _logged_requests(store, sorted({key for _, key, _ in pending}))
    for sid, key, context in pending:
        if key in logged:
            report.turns_matched_to_logged_calls += 1
            if logged[key] != context:
                report.problems.append(f"{sid}: the logged request {key[:12]} holds other messages")
    return report
