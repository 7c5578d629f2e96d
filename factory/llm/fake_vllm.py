"""What the fake server does the way vLLM's OpenAI-compatible server does it.

* **Request shapes**, refused with HTTP 400 as vLLM refuses them: ``response_format``
  of type ``json_schema`` needs ``json_schema.schema`` (``json_object`` and ``text``
  pass); tools are ``{"type": "function", "function": {"name", "parameters"}}``;
  ``tool_choice`` is ``auto`` (only when the server runs with auto tool choice, as
  ``--enable-auto-tool-choice`` does), ``required``, ``none`` or a named function that
  is among the tools; ``chat_template_kwargs`` is an object.
* **Reasoning models** (``Thinking``): unless the request says
  ``chat_template_kwargs={"enable_thinking": false}``, the model thinks first, for
  ``tokens`` tokens, and returns the thinking in ``reasoning_content`` (or ``reasoning``,
  its newer name) or inline as ``<think>...</think>`` before the answer. Thinking counts
  against ``max_tokens``: a budget it eats leaves the answer cut off, with
  ``finish_reason`` ``length``, as a real server would.
* **Usage**: prompt tokens are the characters of the messages and tools over four,
  completion tokens those of the answer plus the thinking; ``completion_tokens_details``
  carries ``reasoning_tokens`` when the server is told to report it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

REASONING_STYLES = ("none", "reasoning_content", "reasoning", "inline")
FILLER = "Let me check each passage against the question before I answer. "


@dataclass(frozen=True)
class Thinking:
    style: str = "none"  # none | reasoning_content | reasoning | inline
    tokens: int = 0  # tokens of thinking per answer while thinking is on
    report_tokens: bool = True  # usage.completion_tokens_details.reasoning_tokens

    def __post_init__(self) -> None:
        if self.style not in REASONING_STYLES:
            raise ValueError(f"reasoning style {self.style!r}: expected one of {', '.join(REASONING_STYLES)}")

    def on(self, body: dict[str, Any]) -> bool:
        kwargs = body.get("chat_template_kwargs") or {}
        return self.style != "none" and self.tokens > 0 and kwargs.get("enable_thinking", True) is not False


def tokens_of(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def prompt_tokens(body: dict[str, Any]) -> int:
    chars = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or []))
                for m in body.get("messages", []))
    chars += len(json.dumps(body.get("tools") or [])) + len(json.dumps(body.get("response_format") or {}))
    return max(1, chars // 4)


def shape_error(body: dict[str, Any], *, auto_tool_choice: bool = True) -> str | None:
    """Why vLLM would refuse this request (HTTP 400), or None."""
    fmt = body.get("response_format")
    if fmt is not None:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind not in ("text", "json_object", "json_schema"):
            return f"response_format.type must be text, json_object or json_schema, got {kind!r}"
        if kind == "json_schema" and not isinstance((fmt.get("json_schema") or {}).get("schema"), dict):
            return "response_format json_schema needs json_schema.schema (a JSON schema object)"
    tools = body.get("tools") or []
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict) \
                or not function.get("name"):
            return "each tool must be {'type': 'function', 'function': {'name': ..., 'parameters': ...}}"
        names.append(function["name"])
    choice = body.get("tool_choice")
    if choice is not None:
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name") if choice.get("type") == "function" else None
            if name not in names:
                return f"tool_choice names a function that is not among the tools: {name!r}"
        elif choice not in ("auto", "required", "none"):
            return f"tool_choice must be auto, required, none or a named function, got {choice!r}"
        elif choice == "auto" and not auto_tool_choice:
            return '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
        elif choice != "none" and not names:
            return "tool_choice needs tools"
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        return "chat_template_kwargs must be an object"
    return None


def shape_of(body: dict[str, Any]) -> dict[str, Any]:
    """The request fields a test checks the shape of (what the log keeps of a body)."""
    fmt = body.get("response_format") or {}
    return {
        "response_format": fmt.get("type"), "schema_name": (fmt.get("json_schema") or {}).get("name"),
        "tools": [t.get("function", {}).get("name") for t in body.get("tools") or []],
        "tool_choice": body.get("tool_choice"), "chat_template_kwargs": body.get("chat_template_kwargs"),
        "max_tokens": body.get("max_tokens"),
    }


def complete_message(body: dict[str, Any], message: dict[str, Any], thinking: Thinking, *,
                     honor_max_tokens: bool) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The final message, its finish reason and its usage: thinking added, the budget applied."""
    message = dict(message)
    answer = message.get("content") or ""
    think = ""
    if thinking.on(body):
        think = (FILLER * (thinking.tokens * 4 // len(FILLER) + 1))[: thinking.tokens * 4].strip()
    budget = int(body.get("max_tokens") or 0)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    if (honor_max_tokens or think) and budget > 0:
        think_used = min(tokens_of(think), budget)
        if tokens_of(think) > budget:
            think = think[: budget * 4]
        left = budget - think_used
        if tokens_of(answer) > left:
            answer = answer[: left * 4]
            message.pop("tool_calls", None)  # a cut-off tool call is no call
            finish = "length"
    if think and thinking.style == "inline":
        closed = finish != "length" or bool(answer)
        message["content"] = f"<think>\n{think}\n</think>\n\n{answer}" if closed else f"<think>\n{think}"
    else:
        message["content"] = answer if (answer or not message.get("tool_calls")) else None
        if think:
            message[thinking.style] = think
    completion = tokens_of(answer) + tokens_of(think)
    for call in message.get("tool_calls") or []:
        completion += tokens_of(json.dumps(call))
    prompt = prompt_tokens(body)
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": max(1, completion),
                             "total_tokens": prompt + max(1, completion)}
    if thinking.style != "none" and thinking.report_tokens:
        usage["completion_tokens_details"] = {"reasoning_tokens": tokens_of(think)}
    return message, finish, usage
