"""Round-sliced SFT samples: one sample per round of a teacher episode.

A round starts from a fresh context (question, saved evidence with reasons, declared
coverage, last summary and goal), so a sample is exactly what the model saw at the
round's start, then the round's turns as they went into the context (assistant
messages and the harness's replies), ending with the action that closed the round.

Messages follow the OpenAI chat layout (``role``, ``content``, ``tool_calls`` with
``function.name``/``function.arguments``, ``tool_call_id``), and every assistant
message carries ``weight``: 1 to learn from, 0 for a turn the harness refused (a
guardrail rejection, an unparsable action, no tool call at all), so a trainer masks
the mistake from the loss and keeps the recovery after it. A turn with several calls
(parallel tool calls, or a JSON list of actions) also carries ``call_weights``, one per
call in order: each refused call is masked on its own, and ``weight`` is 1 only when
no call was refused, for trainers that mask whole messages.
"""

from __future__ import annotations

import json
from typing import Any

from factory.agent.tools import tool_specs
from factory.agent.trace import CallTrace, EpisodeTrace, TurnTrace
from factory.llm.types import Message, ToolCall
from factory.training.tasks import TrainingTask
from factory.training.trajectories import EpisodeLink

ENDINGS = {"save": "save", "finalize": "finalize"}  # anything else ended the round without a tool: "cut"


def message_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


def message_from_dict(item: dict[str, Any]) -> Message:
    """The inverse of ``message_dict`` (``weight`` and other trainer fields dropped)."""
    calls = [
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
        for c in item.get("tool_calls") or []
    ]
    return Message(role=item["role"], content=item.get("content"), tool_calls=calls,
                   tool_call_id=item.get("tool_call_id"), name=item.get("name"))


def tools_payload(trace: EpisodeTrace) -> list[dict[str, Any]]:
    """The three tools in the OpenAI layout (the JSON protocol describes the same tools in its system prompt)."""
    specs = trace.config.tools or tool_specs(trace.config.limits)
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in specs]


def call_masked(call: CallTrace) -> str:
    """Why one call is masked from the loss ('' when it is not)."""
    if call.rejected:
        return call.rejection or "rejected"
    if call.action in ("none", "invalid"):
        return call.rejection or "no_tool_call"
    return ""


def masked(turn: TurnTrace) -> str:
    """Why a turn's assistant message is masked from the loss ('' when it is not): any masked call masks it."""
    return ",".join(why for why in (call_masked(c) for c in turn.calls) if why) if turn.calls else "no_tool_call"


def call_weights(turn: TurnTrace) -> list[int]:
    """One weight per call of the turn, in call order: 0 for a refused call."""
    return [0 if call_masked(c) else 1 for c in turn.calls]


def completeness(saved: list[str], gold: list[str]) -> str:
    """How much of the gold support the round starts with: none, partial or complete."""
    gold_set = set(gold)
    if not gold_set:
        return "none"
    held = len(gold_set & set(saved))
    return "complete" if held == len(gold_set) else "partial" if held else "none"


def slice_episode(trace: EpisodeTrace, task: TrainingTask, link: EpisodeLink, difficulty: str) -> list[dict[str, Any]]:
    """One sample per round that has at least one model turn."""
    tools = tools_payload(trace)
    samples = []
    for round_ in trace.rounds:
        messages = [message_dict(m) for m in round_.start_messages]
        n_turns = rejected = 0
        reasons: list[str] = []
        for turn in trace.round_turns(round_.round_no):
            if turn.assistant is None:  # the call failed: nothing the model said
                continue
            n_turns += 1
            item = message_dict(turn.assistant)
            why = masked(turn)
            item["weight"] = 0 if why else 1
            if len(turn.calls) > 1:
                item["call_weights"] = call_weights(turn)
            if why:
                rejected += 1
                reasons.append(why)
            messages.append(item)
            messages.extend(message_dict(m) for m in turn.replies)
        if n_turns == 0:
            continue
        saved = [s.chunk_id for s in round_.state.saved]
        samples.append({
            "sample_id": f"{trace.episode_id}:{round_.round_no}",
            "messages": messages,
            "tools": tools,
            "episode_id": trace.episode_id,
            "task_id": task.task_id,
            "lang": task.lang,
            "round_no": round_.round_no,
            "episode_rounds": len(trace.rounds),
            "ending_action": ENDINGS.get(round_.ended_by, "cut"),
            "ended_by": round_.ended_by,
            "turns": n_turns,
            "masked_turns": rejected,
            "mask_reasons": reasons,
            "final_recall": link.recall,
            "trajectory_recall": link.trajectory_recall,
            "low_recall": link.low_recall,
            "teacher": link.teacher,
            "model": trace.model,
            "protocol": trace.protocol,
            "profile": trace.profile,
            "mechanic": task.mechanic or "unknown",
            "cell": task.cell,
            "difficulty": difficulty,
            "completeness": completeness(saved, task.support_chunk_ids),
            "question": task.question,
            "gold_chunk_ids": list(task.support_chunk_ids),
            "state": round_.state.model_dump(mode="json"),
            "copy": 0,
            "upsampled": False,
        })
    return samples


def sample_start(sample: dict[str, Any]) -> list[Message]:
    """The context the round started with: the messages before the first assistant turn."""
    out = []
    for item in sample["messages"]:
        if item["role"] == "assistant":
            break
        out.append(message_from_dict(item))
    return out


def sample_contexts(sample: dict[str, Any]) -> list[list[Message]]:
    """For each assistant turn of the sample, the messages the model was given before it."""
    contexts, so_far = [], []
    for item in sample["messages"]:
        if item["role"] == "assistant":
            contexts.append(list(so_far))
        so_far.append(message_from_dict(item))
    return contexts


def to_json_line(sample: dict[str, Any]) -> str:
    return json.dumps(sample, ensure_ascii=False)
