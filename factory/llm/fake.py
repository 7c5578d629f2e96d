"""A scripted LLM for tests, shipped in the package (fakes, not mocks).

Answers come from, in order: a script consumed call by call, then rules (a predicate
or a regex on the last user message, and a reply), then a default. A reply can be a
string (text; parsed as JSON when the request has an output schema), a dict (the
parsed object), an ``LLMResponse``, or a callable taking the request.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from typing import Any, Callable, Iterable, Union

from factory.llm.types import LLMRequest, LLMResponse, ToolCall

Reply = Union[str, dict, LLMResponse, Callable[[LLMRequest], Any]]
Predicate = Union[str, Callable[[LLMRequest], bool]]


class FakeLLM:
    name = "fake"

    def __init__(
        self,
        script: Iterable[Reply] | None = None,
        rules: Iterable[tuple[Predicate, Reply]] | None = None,
        default: Reply | None = None,
        *,
        model: str = "fake-model",
        context_tokens: int = 32_768,
        delay_s: float = 0.0,
    ) -> None:
        self.model = model
        self.context_tokens = context_tokens
        self._script = list(script or [])
        self._rules = list(rules or [])
        self._default = default if default is not None else ""
        self._delay = delay_s
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self.requests.append(request)
            reply = self._script.pop(0) if self._script else self._match(request)
        if self._delay:
            time.sleep(self._delay)
        start = time.perf_counter()
        response = self._to_response(request, reply)
        response.latency_s = response.latency_s or time.perf_counter() - start
        return response

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _match(self, request: LLMRequest) -> Reply:
        last_user = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
        for predicate, reply in self._rules:
            if callable(predicate):
                if predicate(request):
                    return reply
            elif re.search(predicate, last_user, re.DOTALL):
                return reply
        return self._default

    def _to_response(self, request: LLMRequest, reply: Reply) -> LLMResponse:
        if callable(reply) and not isinstance(reply, (str, dict, LLMResponse)):
            reply = reply(request)
        if isinstance(reply, LLMResponse):
            response = reply.model_copy(deep=True)
        elif isinstance(reply, dict) and "tool" in reply and set(reply) <= {"tool", "arguments"}:
            # a tool call: {"tool": name, "arguments": {...}}
            call = ToolCall(
                id=f"call_{next(self._ids)}",
                name=reply["tool"],
                arguments=json.dumps(reply.get("arguments", {}), ensure_ascii=False),
            )
            response = LLMResponse(tool_calls=[call], finish_reason="tool_calls")
        elif isinstance(reply, dict):
            response = LLMResponse(text=json.dumps(reply, ensure_ascii=False), parsed=reply, finish_reason="stop")
        else:
            response = LLMResponse(text=str(reply), finish_reason="stop")
            if request.output_schema is not None:
                try:
                    value = json.loads(response.text)
                    if isinstance(value, dict):
                        response.parsed = value
                    else:
                        response.parse_error = "expected a JSON object"
                except json.JSONDecodeError as exc:
                    response.parse_error = f"invalid JSON: {exc}"
        response.backend = "fake"
        response.model = self.model
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        response.tokens_in = response.tokens_in or max(1, prompt_chars // 4)
        response.tokens_out = response.tokens_out or max(1, len(response.text) // 4)
        return response


def example_from_schema(schema: dict[str, Any], *, root: dict[str, Any] | None = None, name: str = "value") -> Any:
    """A small deterministic value that follows a JSON schema (pydantic-style schemas)."""
    root = root or schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref are supported, got {ref!r}")
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return example_from_schema(node, root=root, name=name)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for combo in ("anyOf", "oneOf", "allOf"):
        if schema.get(combo):
            options = [s for s in schema[combo] if s.get("type") != "null"] or schema[combo]
            return example_from_schema(options[0], root=root, name=name)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: example_from_schema(sub, root=root, name=key) for key, sub in props.items()}
    if kind == "array":
        count = int(schema.get("minItems", 1))
        item = schema.get("items", {"type": "string"})
        return [example_from_schema(item, root=root, name=name) for _ in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    text = f"fake {name}".replace("_", " ")
    min_len, max_len = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = text.ljust(min_len, ".")
    return text[: int(max_len)] if max_len is not None else text


def rule_reply(request: LLMRequest) -> Reply:
    """The `fake` spec's answers: an instance of the schema when one is asked for, else an echo."""
    if request.output_schema is not None:
        return example_from_schema(request.output_schema)
    last_user = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
    return f"fake answer to: {' '.join(last_user.split())[:80]}"


def rule_fake(*, delay_s: float = 0.0, model: str = "fake-rules") -> FakeLLM:
    """A FakeLLM that answers every request deterministically (the `fake` spec)."""
    return FakeLLM(default=rule_reply, model=model, delay_s=delay_s)
