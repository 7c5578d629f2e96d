"""The agent's three tools: JSON schemas, argument models, and how results are shown.

The same schemas serve both protocols: as OpenAI function tools, and wrapped into
one JSON-schema action (``{"action": NAME, "arguments": {...}}``, an ``anyOf`` of
the three) for backends that can only constrain their output to a schema, such as
the embedded llama.cpp model. The schemas stay plain (objects, arrays, strings,
one integer, ``const``) so llama.cpp's schema-to-grammar conversion handles them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from factory.llm.types import ToolSpec
from factory.settings import AgentLimits

SEARCH = "search_corpus"
SAVE = "save_and_advance"
FINALIZE = "finalize_ranking"
TOOL_NAMES = (SEARCH, SAVE, FINALIZE)


class _Args(BaseModel):
    # models add stray keys now and then; they are ignored rather than punished
    model_config = ConfigDict(extra="ignore")


class ChunkReason(_Args):
    chunk_id: str
    reason: str


class SearchArgs(_Args):
    query: str
    top_k: int | None = None


class SaveArgs(_Args):
    saved_chunks: list[ChunkReason]
    drop_from_saved: list[str] = Field(default_factory=list)
    covered_concepts: list[str]
    unresolved_concepts: list[str]
    round_summary: str
    next_round_goal: str


class FinalizeArgs(_Args):
    ranking: list[ChunkReason]
    covered_concepts: list[str]
    unresolved_concepts: list[str]


ARG_MODELS: dict[str, type[_Args]] = {SEARCH: SearchArgs, SAVE: SaveArgs, FINALIZE: FinalizeArgs}

# Length caps keep a grammar-constrained small model from rambling inside a string
# until its token limit cuts the JSON off (seen with SmolLM2: reasons of repeated dates).
QUERY_CHARS, ID_CHARS, REASON_CHARS, CONCEPT_CHARS, SUMMARY_CHARS, GOAL_CHARS = 160, 80, 240, 80, 480, 240
MAX_CONCEPTS = 8


def _text(description: str, max_chars: int) -> dict[str, Any]:
    return {"type": "string", "description": description, "maxLength": max_chars}


def _strings(description: str, max_chars: int, max_items: int) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": {"type": "string", "maxLength": max_chars},
            "maxItems": max_items}


def _chunk_reasons(what: str, max_items: int) -> dict[str, Any]:
    return {
        "type": "array",
        "description": what,
        "items": {
            "type": "object",
            "properties": {
                "chunk_id": _text("a chunk id exactly as shown in a search result", ID_CHARS),
                "reason": _text("what this chunk establishes for the question", REASON_CHARS),
            },
            "required": ["chunk_id", "reason"],
        },
        "maxItems": max_items,
    }


def tool_parameters(limits: AgentLimits) -> dict[str, dict[str, Any]]:
    coverage = {
        "covered_concepts": _strings("parts of the question the evidence settles", CONCEPT_CHARS, MAX_CONCEPTS),
        "unresolved_concepts": _strings("parts of the question still open", CONCEPT_CHARS, MAX_CONCEPTS),
    }
    return {
        SEARCH: {
            "type": "object",
            "properties": {
                "query": _text("a search query (keywords or a short phrase)", QUERY_CHARS),
                "top_k": {
                    "type": "integer",
                    "description": f"results wanted, 1 to {limits.top_k_max} (default {limits.top_k_default})",
                },
            },
            "required": ["query"],
        },
        SAVE: {
            "type": "object",
            "properties": {
                "saved_chunks": _chunk_reasons("chunks to keep as evidence, each with a reason", limits.saved_soft_cap),
                "drop_from_saved": _strings("ids of saved chunks that turned out useless", ID_CHARS,
                                            limits.saved_soft_cap),
                **coverage,
                "round_summary": _text("what this round found and ruled out", SUMMARY_CHARS),
                "next_round_goal": _text("what the next round must find", GOAL_CHARS),
            },
            "required": ["saved_chunks", "covered_concepts", "unresolved_concepts", "round_summary", "next_round_goal"],
        },
        FINALIZE: {
            "type": "object",
            "properties": {
                "ranking": _chunk_reasons(f"the best evidence first, at most {limits.final_k} chunks", limits.final_k),
                **coverage,
            },
            "required": ["ranking", "covered_concepts", "unresolved_concepts"],
        },
    }


_DESCRIPTIONS = {
    SEARCH: "Search the corpus. Returns passages with their chunk ids; passages already shown in this round "
    "and chunks already saved are left out.",
    SAVE: "Keep evidence and start a fresh round: the transcript is dropped, only the question, the saved "
    "chunks with reasons, the declared coverage, the summary and the goal are carried over.",
    FINALIZE: "End the search with a ranking of the chunks that answer the question, best first.",
}


def tool_specs(limits: AgentLimits) -> list[ToolSpec]:
    params = tool_parameters(limits)
    return [ToolSpec(name=name, description=_DESCRIPTIONS[name], parameters=params[name]) for name in TOOL_NAMES]


def action_schema(limits: AgentLimits) -> dict[str, Any]:
    """One JSON action per turn: ``{"action": NAME, "arguments": {...}}``."""
    params = tool_parameters(limits)
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"action": {"const": name}, "arguments": params[name]},
                "required": ["action", "arguments"],
            }
            for name in TOOL_NAMES
        ]
    }


def describe_tools(limits: AgentLimits) -> str:
    """The tools in words, for the system prompt of the JSON protocol."""
    lines = []
    for spec in tool_specs(limits):
        props = spec.parameters["properties"]
        required = set(spec.parameters.get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}" for k in props)
        lines.append(f"- {spec.name}({args}): {spec.description}")
    return "\n".join(lines)


class ArgumentError(ValueError):
    pass


class NoAction(ArgumentError):
    """The reply holds no JSON at all: prose, i.e. no tool call."""


def parse_arguments(name: str, arguments: Any) -> _Args:
    """Validate a call's arguments; the error text tells the model what to fix."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"the arguments of {name} are not valid JSON ({exc.msg} at position {exc.pos})") from exc
    if not isinstance(arguments, dict):
        raise ArgumentError(f"the arguments of {name} must be a JSON object")
    try:
        return ARG_MODELS[name].model_validate(arguments)
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:5]:
            where = ".".join(str(part) for part in error["loc"]) or "arguments"
            problems.append(f"{where}: {error['msg'].lower()}")
        raise ArgumentError(f"invalid arguments for {name}: " + "; ".join(problems)) from exc


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_action(text: str, parsed: dict[str, Any] | None) -> tuple[str, Any]:
    """(tool name, arguments) from a JSON-protocol reply; raises ArgumentError."""
    value: Any = parsed
    if value is None:
        body = _FENCE.sub("", (text or "").strip())
        start, end = body.find("{"), body.rfind("}")
        if start < 0:
            raise NoAction('no JSON action found; answer with {"action": TOOL_NAME, "arguments": {...}}')
        if end <= start:
            raise ArgumentError("the action is not complete JSON (no closing brace); answer with one JSON object")
        try:
            value = json.loads(body[start : end + 1])
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"the action is not valid JSON ({exc.msg}); answer with one JSON object") from exc
    if not isinstance(value, dict):
        raise ArgumentError("the action must be a JSON object")
    name = value.get("action")
    if not isinstance(name, str):
        raise ArgumentError('the action has no "action" field naming one of: ' + ", ".join(TOOL_NAMES))
    if "arguments" in value:
        return name, value["arguments"]
    # a flat action ({"action": ..., "query": ...}) is accepted as well
    return name, {k: v for k, v in value.items() if k != "action"}


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return head.rstrip(" ,;:") + " …"


def format_results(query: str, shown: list[tuple[str, str]], hidden: int, warnings: list[str]) -> str:
    """The search result message: each passage with its chunk id."""
    head = f'Results for "{query}": {len(shown)} passage(s)'
    if hidden:
        head += f" ({hidden} already shown this round or saved, left out)"
    lines = [head + "."]
    for i, (chunk_id, text) in enumerate(shown, 1):
        lines.append(f"[{i}] chunk_id: {chunk_id}\n{text}")
    if not shown:
        lines.append("No new passages. Try different words, a related entity, or a narrower query.")
    lines.extend(f"Warning: {w}" for w in warnings)
    return "\n\n".join(lines)
