"""Checking a structured answer against the request's JSON schema, and the one repair.

A backend may constrain decoding by the schema (llama.cpp grammars, vLLM guided
decoding) and still hand back something unusable: cut off at ``max_tokens``, wrapped
in a code fence, or, for servers that ignore the schema, plain prose. The answer is
parsed here, validated with ``jsonschema``, and a failure becomes ``parse_error``
(the raw text is kept), never an exception.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from factory.llm.thinking import separate_thinking, truncation
from factory.llm.types import LLMRequest, LLMResponse, Message

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def extract_json(text: str) -> Any:
    """Parse JSON text; tolerate a code fence or chatter around one top-level object."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end and (start > 0 or end < len(stripped) - 1):
            return json.loads(stripped[start : end + 1])
        raise


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(schema: dict[str, Any], value: Any, limit: int = 3) -> list[str]:
    """Human-readable reasons why value does not follow schema (empty when it does)."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    out = []
    for error in errors[:limit]:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        out.append(f"{where}: {error.message[:200]}")
    return out


def check_output(request: LLMRequest, response: LLMResponse) -> LLMResponse:
    """Fill ``parsed``, or ``parse_error`` or ``truncated``, for a request with an output schema
    (in place); any inline thinking is moved out of the text first (``factory/llm/thinking.py``)."""
    separate_thinking(response)
    if request.output_schema is None or response.error is not None or response.tool_calls:
        return response
    value: Any = response.parsed
    if value is None:
        if not response.text.strip():
            return _fail(response, "empty answer", request)
        try:
            value = extract_json(response.text)
        except json.JSONDecodeError as exc:
            return _fail(response, f"invalid JSON: {exc}", request)
    if not isinstance(value, dict):
        return _fail(response, f"expected a JSON object, got {type(value).__name__}", request)
    try:
        problems = schema_errors(request.output_schema, value)
    except SchemaError as exc:
        response.error = f"the request's output schema is not a valid JSON schema: {exc.message}"
        return response
    if problems:
        response.parsed = None
        return _fail(response, "does not match the schema: " + "; ".join(problems), request)
    response.parsed = value
    response.parse_error = None
    response.truncated = None
    return response


def _fail(response: LLMResponse, reason: str, request: LLMRequest) -> LLMResponse:
    response.parsed = None
    if response.finish_reason == "length":  # not the model's format: its budget ran out
        response.truncated = truncation(request, response, reason)
        response.parse_error = None
    else:
        response.parse_error = reason
    return response


@lru_cache(maxsize=1)
def _repair_template() -> str:
    return (resources.files("factory.llm") / "prompts" / "repair.txt").read_text(encoding="utf-8")


def repair_request(request: LLMRequest, failed: LLMResponse) -> LLMRequest:
    """The same conversation plus the bad answer and what was wrong with it."""
    note = _repair_template().format(
        error=failed.parse_error or "unusable answer",
        schema=json.dumps(request.output_schema, ensure_ascii=False, sort_keys=True),
    )
    messages = list(request.messages) + [
        Message(role="assistant", content=failed.text[:4000]),
        Message(role="user", content=note),
    ]
    return request.model_copy(update={"messages": messages})


def merge_repair(first: LLMResponse, second: LLMResponse) -> LLMResponse:
    """The repaired outcome, carrying the cost of both calls."""
    merged = second.model_copy()
    merged.tokens_in = first.tokens_in + second.tokens_in
    merged.tokens_out = first.tokens_out + second.tokens_out
    merged.thinking_tokens = first.thinking_tokens + second.thinking_tokens
    merged.latency_s = first.latency_s + second.latency_s
    if merged.error is None and merged.parse_error is not None:
        merged.parse_error = f"still unusable after one repair request: {merged.parse_error}"
    return merged
