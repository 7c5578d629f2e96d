"""The agent's three tools: JSON schemas, argument models, and how results are shown.

The same schemas serve both protocols: as OpenAI function tools, and wrapped into a
JSON-schema action (``{"action": NAME, "arguments": {...}}``, an ``anyOf`` of the
three) for backends that can only constrain their output to a schema, such as the
embedded llama.cpp model; ``{"actions": [...]}`` runs several in one turn, as several
tool calls do. Names, types, required flags and limits are the released harness's
(DESIGN.md, "The released tool schemas"); the descriptions are ours. The schemas stay
plain (objects, arrays, strings, one integer, ``const``) so llama.cpp's
schema-to-grammar conversion handles them.
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
    unresolved_concepts: list[str] = Field(default_factory=list)


ARG_MODELS: dict[str, type[_Args]] = {SEARCH: SearchArgs, SAVE: SaveArgs, FINALIZE: FinalizeArgs}

# Length caps keep a grammar-constrained small model from rambling inside a string
# until its token limit cuts the JSON off (seen with SmolLM2: reasons of repeated dates).
QUERY_CHARS, ID_CHARS, REASON_CHARS, CONCEPT_CHARS, SUMMARY_CHARS, GOAL_CHARS = 160, 80, 240, 80, 480, 240
MAX_CONCEPTS = 8


def _text(description: str, max_chars: int, min_chars: int = 0) -> dict[str, Any]:
    return {"type": "string", "description": description, **({"minLength": min_chars} if min_chars else {}),
            "maxLength": max_chars}


def _strings(description: str, max_chars: int, max_items: int) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": {"type": "string", "maxLength": max_chars},
            "maxItems": max_items}


def _chunk_reasons(what: str, limits: AgentLimits, max_items: int, min_items: int = 0) -> dict[str, Any]:
    return {
        "type": "array",
        "description": what,
        "items": {
            "type": "object",
            "properties": {
                "chunk_id": _text("a chunk id exactly as your current context shows it", ID_CHARS),
                "reason": _text(f"at least {limits.min_reason_chars} characters: the fact or entity this chunk "
                                "contributes to the answer", REASON_CHARS, limits.min_reason_chars),
            },
            "required": ["chunk_id", "reason"],
        },
        **({"minItems": min_items} if min_items else {}),
        "maxItems": max_items,
    }


def tool_parameters(limits: AgentLimits) -> dict[str, dict[str, Any]]:
    covered = _strings("short labels of the parts of the question the evidence settles", CONCEPT_CHARS, MAX_CONCEPTS)
    unresolved = _strings("short labels of the parts still open (none in covered_concepts too)", CONCEPT_CHARS,
                          MAX_CONCEPTS)
    return {
        SEARCH: {
            "type": "object",
            "properties": {
                "query": _text("a search query (keywords or a short phrase)", QUERY_CHARS),
                "top_k": {
                    "type": "integer",
                    "description": f"results wanted, 1 to {limits.top_k_max}",
                    "default": limits.top_k_default,
                },
            },
            "required": ["query"],
        },
        SAVE: {
            "type": "object",
            "properties": {
                "saved_chunks": _chunk_reasons(
                    "chunks to keep, from this round's results or the saved set (re-passing a saved chunk updates "
                    "its reason)", limits, limits.saved_soft_cap),
                "drop_from_saved": {**_strings("ids of saved chunks to drop, [] to drop nothing; none of them in "
                                               "saved_chunks", ID_CHARS, limits.saved_soft_cap), "default": []},
                "covered_concepts": covered,
                "unresolved_concepts": unresolved,
                "round_summary": _text("what this round found and ruled out", SUMMARY_CHARS, limits.min_summary_chars),
                "next_round_goal": _text("what the next round must find", GOAL_CHARS, limits.min_goal_chars),
            },
            "required": ["saved_chunks", "covered_concepts", "unresolved_concepts", "round_summary", "next_round_goal"],
        },
        FINALIZE: {
            "type": "object",
            "properties": {
                "ranking": _chunk_reasons(f"the evidence, most relevant first (at most {limits.final_k} are kept)",
                                          limits, limits.final_k, min_items=1),
                "covered_concepts": covered,
                "unresolved_concepts": {**unresolved, "default": []},
            },
            "required": ["ranking", "covered_concepts"],
        },
    }


_DESCRIPTIONS = {
    SEARCH: "Search the fixed corpus; returns up to top_k results, each with its chunk_id, a snippet and a score. "
    "You may call it several times in one turn; each call counts as one search. Within a round, results already "
    "shown this round are left out, and so are saved chunks (they are in your context already); passages seen in "
    "an earlier round but not saved can come back. A refused call says why; fix it and call again.",
    SAVE: "Keep evidence and start a fresh round. The transcript is dropped: only the question, the saved chunks "
    "with their reasons and text, the declared coverage, the summary and the goal carry over. Needs "
    "{min_searches} searches this round and at least one saved chunk; not available in the last round. Ids must "
    "come from your current context (this round's results or the saved set); re-passing a saved chunk updates its "
    "reason; no id may be in both saved_chunks and drop_from_saved. A refused call may be fixed and retried.",
    FINALIZE: "End the search with your ranking, most relevant first. Ids must come from your current context (the "
    "saved set and this round's results). Refused while half or more of the declared concepts are unresolved, "
    "except in the last round; a refused call may be fixed and retried.",
}


def tool_specs(limits: AgentLimits) -> list[ToolSpec]:
    params = tool_parameters(limits)
    return [
        ToolSpec(name=name, description=_DESCRIPTIONS[name].format(min_searches=limits.min_searches_to_save),
                 parameters=params[name])
        for name in TOOL_NAMES
    ]


def action_schema(limits: AgentLimits) -> dict[str, Any]:
    """A JSON action ``{"action": NAME, "arguments": {...}}``, or ``{"actions": [...]}`` run in order.

    The list is wrapped in an object: structured-output checks (and ``LLMResponse.parsed``)
    take one object at the top level. A bare list is still read (``parse_actions``).
    """
    params = tool_parameters(limits)
    one = [
        {
            "type": "object",
            "properties": {"action": {"const": name}, "arguments": params[name]},
            "required": ["action", "arguments"],
        }
        for name in TOOL_NAMES
    ]
    several = {
        "type": "object",
        "properties": {"actions": {"type": "array", "items": {"anyOf": one}, "minItems": 1,
                                   "maxItems": limits.max_calls_per_turn}},
        "required": ["actions"],
    }
    # the single action first: a decoder that takes the first branch gets one action
    return {"anyOf": [*one, several]}


def describe_tools(limits: AgentLimits) -> str:
    """The tools in words, for the system prompt of the JSON protocol: each one's arguments and
    first sentence (the system prompt's rules say the rest)."""
    lines = []
    for spec in tool_specs(limits):
        props = spec.parameters["properties"]
        required = set(spec.parameters.get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}" for k in props)
        lines.append(f"- {spec.name}({args}): {spec.description.split('. ')[0].rstrip('.')}.")
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


def parse_actions(text: str, parsed: Any) -> list[tuple[str, Any]]:
    """[(tool name, arguments)] from a JSON-protocol reply: one action or a list; raises ArgumentError."""
    value: Any = parsed
    if value is None:
        value = _json_in(_FENCE.sub("", (text or "").strip()))
    if isinstance(value, dict) and isinstance(value.get("actions"), list) and "action" not in value:
        value = value["actions"]  # {"actions": [...]} as well
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ArgumentError("the list of actions is empty; give at least one action")
    return [_one_action(item) for item in items]


def _json_in(body: str) -> Any:
    """The first JSON object, or list of objects, in a reply; prose around it is ignored."""
    starts = [i for i, ch in enumerate(body) if ch in "{["][:64]
    if not starts:
        raise NoAction('no JSON action found; answer with {"action": TOOL_NAME, "arguments": {...}}')
    decoder = json.JSONDecoder()
    first: json.JSONDecodeError | None = None
    for start in starts:  # a bracket in prose before the action must not hide it
        try:
            value, _ = decoder.raw_decode(body, start)
        except json.JSONDecodeError as exc:
            first = first or exc
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            return value
    if not body.rstrip().endswith(("}", "]")):
        raise ArgumentError("the action is not complete JSON (no closing bracket); answer with one JSON value")
    raise ArgumentError(f"the action is not valid JSON ({first.msg if first else 'no object found'}); "
                        "answer with one JSON value")


def _one_action(value: Any) -> tuple[str, Any]:
    if not isinstance(value, dict):
        raise ArgumentError("each action must be a JSON object")
    name = value.get("action")
    if not isinstance(name, str):
        raise ArgumentError('an action has no "action" field naming one of: ' + ", ".join(TOOL_NAMES))
    if "arguments" in value:
        return name, value["arguments"]
    # a flat action ({"action": ..., "query": ...}) is accepted as well
    return name, {k: v for k, v in value.items() if k != "action"}


def snippet_chars(limits: AgentLimits) -> int:
    """The snippet cap in characters: ``snippet_tokens`` at the configured characters per token."""
    return int(limits.snippet_tokens * limits.chars_per_token)


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return head.rstrip(" ,;:") + " …"


def format_results(query: str, shown: list[tuple[str, float, str]], hidden: int, warnings: list[str]) -> str:
    """The search result message: each passage with its chunk id and score."""
    head = f'Results for "{query}": {len(shown)} passage(s)'
    if hidden:
        head += f" ({hidden} already shown this round or saved, left out)"
    lines = [head + "."]
    for i, (chunk_id, score, text) in enumerate(shown, 1):
        lines.append(f"[{i}] chunk_id: {chunk_id}\nscore: {score:.3f}\n{text}")
    if not shown:
        lines.append("No new passages. Try different words, a related entity, or a narrower query.")
    lines.extend(f"Warning: {w}" for w in warnings)
    return "\n\n".join(lines)
