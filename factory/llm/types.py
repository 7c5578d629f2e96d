"""Typed LLM requests and responses, and the one protocol every backend implements."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


@lru_cache(maxsize=256)
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, made once per class (pydantic builds it anew on every call)."""
    return json.loads(_schema_text(model))


TRUNCATED = "truncated: "  # how a truncation reads where it becomes text (``problem``, a draft's parse error)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    id: str
    name: str
    arguments: str = Field(description="JSON text exactly as the model produced it")

    def parsed_arguments(self) -> dict[str, Any]:
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


class Message(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(_Model):
    """An OpenAI-style function tool."""

    name: str
    description: str
    parameters: dict[str, Any]


class Sampling(_Model):
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    stop: list[str] = Field(default_factory=list)


class LLMRequest(_Model):
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: str | None = Field(None, description="'auto', 'required', 'none' or a tool name")
    output_schema: dict[str, Any] | None = Field(None, description="JSON schema the answer must follow")
    schema_name: str | None = None
    sampling: Sampling = Field(default_factory=Sampling)
    seed: int = 0
    sample_index: int = Field(0, description="ask the same thing again on purpose: a different cache key")

    @classmethod
    def chat(
        cls,
        system: str | None,
        user: str,
        *,
        output: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> "LLMRequest":
        messages = ([Message(role="system", content=system)] if system else []) + [Message(role="user", content=user)]
        if output is not None:
            kwargs.setdefault("output_schema", json_schema(output))
            kwargs.setdefault("schema_name", output.__name__)
        return cls(messages=messages, **kwargs)

    def canonical(self) -> str:
        """Sorted-key JSON of everything that determines the answer (no endpoints, no secrets)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def effective_seed(self) -> int:
        """The sampler seed a backend uses: differs per sample index, so samples differ at temperature > 0."""
        return (self.seed * 1_000_003 + self.sample_index) % 2**31

    def key(self, model: str = "") -> str:
        """Cache key: the canonical request plus the model name it is asked of."""
        return hashlib.sha256(f"{model}\n{self.canonical()}".encode()).hexdigest()


class LLMResponse(_Model):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parsed: dict[str, Any] | None = None
    parse_error: str | None = None
    error: str | None = Field(None, description="the call failed (after retries): the reason")
    truncated: str | None = Field(None, description="a structured answer cut off at max_tokens: the figures")
    finish_reason: str | None = None
    reasoning: str = Field("", description="the model's thinking (reasoning_content or an inline <think> block)")
    tokens_in: int = 0
    tokens_out: int = Field(0, description="every completion token, thinking included")
    thinking_tokens: int = Field(0, description="of tokens_out, those spent thinking")
    latency_s: float = 0.0
    backend: str = ""
    model: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.parse_error is None and self.truncated is None

    @property
    def problem(self) -> str | None:
        """Why the answer cannot be used: the failed call, the cut-off answer or the parse failure."""
        if self.error is not None:
            return self.error
        if self.truncated is not None:
            return TRUNCATED + self.truncated
        return self.parse_error


@runtime_checkable
class LLM(Protocol):
    """Every backend and the gateway implement this one method."""

    name: str
    model: str
    context_tokens: int

    def complete(self, request: LLMRequest) -> LLMResponse: ...
