"""Any OpenAI-compatible chat endpoint through the official ``openai`` client.

Production runs vLLM's server (``vllm serve MODEL``); a llama.cpp server, or anything
else speaking ``/v1/chat/completions``, works the same way. Servers differ in how they
take a JSON schema, so the spec says which (``structured``):

* ``json_schema`` (default, ``openai:`` / ``openai+vllm:``):
  ``response_format={"type": "json_schema", "json_schema": {"name", "schema"}}``,
  which vLLM turns into guided decoding.
* ``json_object`` (``openai+llamacpp:`` or ``?structured=json_object``):
  ``{"type": "json_object", "schema": ...}``, as llama.cpp's servers take it.
* ``none``: the schema is only described by the prompt; the answer is still checked.

Tools go in the OpenAI tools layout (``tool_choice`` auto, required, none or a named
function, as vLLM takes them); assistant tool calls, several in one turn included, and
tool results round-trip. Reasoning models (``factory/llm/thinking.py``): calls that
``disable_thinking`` names (default: those with an output schema) are sent with
``chat_template_kwargs={"enable_thinking": false}``; ``reasoning_content`` (or
``reasoning``) is kept apart from the answer, and the server's
``completion_tokens_details.reasoning_tokens`` is taken when it reports one.
Retries are the client's own: timeouts, refused connections, 408/409/429 and 5xx,
with exponential backoff and jitter, ``max_retries`` times. Several comma-separated
URLs serving one model are load-balanced (``factory/llm/balancer.py``): the least busy
endpoint first, and a request that fails on one endpoint is retried on another while
the failed one rests. The API key is read from an environment variable (never part of
a spec, a log or a cache key).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from factory.errors import FactoryError
from factory.llm.balancer import EndpointPool
from factory.llm.base import describe_error, guarded
from factory.llm.spec import LLMSpec, float_option, int_option
from factory.llm.structured import check_output
from factory.llm.types import LLMRequest, LLMResponse, Message, ToolCall
from factory.settings import LLMSettings

STRUCTURED_MODES = ("json_schema", "json_object", "none")
THINKING_SWITCH = ("structured", "all", "never")
FLAVORS = {"": "json_schema", "vllm": "json_schema", "llamacpp": "json_object", "plain": "none"}


class OpenAIBackendError(FactoryError):
    pass


class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        urls: list[str],
        model: str,
        *,
        structured: str = "json_schema",
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        context_tokens: int = 0,
        cooldown_s: float = 2.0,
        disable_thinking: str = "structured",
    ) -> None:
        if not urls:
            raise OpenAIBackendError("the openai backend needs an endpoint URL, e.g. openai:http://127.0.0.1:8000/v1#MODEL")
        if not model:
            raise OpenAIBackendError(f"the openai backend needs a model name after '#', e.g. openai:{urls[0]}#MODEL")
        if structured not in STRUCTURED_MODES:
            raise OpenAIBackendError(f"structured={structured!r}: expected one of {', '.join(STRUCTURED_MODES)}")
        if disable_thinking not in THINKING_SWITCH:
            raise OpenAIBackendError(f"disable_thinking={disable_thinking!r}: expected one of {', '.join(THINKING_SWITCH)}")
        from openai import OpenAI

        self.urls = urls
        self.model = model
        self.structured = structured
        self.disable_thinking = disable_thinking
        # the switch changes the answers: a non-default one is part of the cache key
        self.cache_tag = "" if disable_thinking == "structured" else f"thinking-off:{disable_thinking}"
        # one endpoint: the client retries on it; several: the pool retries on another one
        client_retries = max_retries if len(urls) == 1 else 0
        self._clients = [
            OpenAI(base_url=url, api_key=api_key or "EMPTY", timeout=timeout_s, max_retries=client_retries)
            for url in urls
        ]
        self.pool = EndpointPool(urls, cooldown_s=cooldown_s)
        self._context = context_tokens
        self._body_retries = max_retries

    @classmethod
    def from_spec(cls, spec: LLMSpec, settings: LLMSettings) -> "OpenAIBackend":
        if spec.flavor not in FLAVORS:
            raise OpenAIBackendError(f"LLM spec {spec.text!r}: unknown flavor {spec.flavor!r}; known: vllm, llamacpp, plain")
        key_env = spec.option("api_key_env") or settings.api_key_env
        return cls(
            spec.urls,
            spec.model,
            structured=spec.option("structured") or FLAVORS[spec.flavor],
            api_key=os.environ.get(key_env) if key_env else None,
            timeout_s=float_option(spec, "timeout", settings.timeout_s),
            max_retries=int_option(spec, "retries", settings.max_retries),
            context_tokens=int_option(spec, "context", settings.context_tokens),
            cooldown_s=float_option(spec, "cooldown", 2.0),
            # a generic OpenAI-compatible server may refuse fields it does not know
            disable_thinking="never" if spec.flavor == "plain" else settings.disable_thinking,
        )

    @property
    def context_tokens(self) -> int:
        """The window: settings or the spec's ``context=``, else what the server says
        (vLLM's ``max_model_len``, a llama.cpp server's runtime ``n_ctx``), else 0: unknown,
        and the caller decides (the search agent falls back to its settings, with a warning)."""
        if not self._context:
            self._context = self._probe_context()
        return self._context

    def _probe_context(self) -> int:
        for client, url in zip(self._clients, self.urls):  # the first endpoint that answers (one may be down)
            try:
                for entry in client.with_options(max_retries=0, timeout=5.0).models.list().data:
                    if entry.id == self.model and (entry.model_extra or {}).get("max_model_len"):
                        return int(entry.model_extra["max_model_len"])
            except Exception:  # noqa: BLE001 - a probe: try the next endpoint
                continue
            # llama.cpp's /v1/models has only n_ctx_train (what the model was trained on), not the
            # context the server was started with (-c): that is in /props
            return _llamacpp_context(url)
        return 0

    def _create(self, body: dict[str, Any]) -> Any:
        if len(self._clients) > 1:
            return self._create_balanced(body)
        # the client retries transport faults and 429/5xx itself; a 200 whose body is not
        # JSON (a proxy cutting the answer off) it does not, so that is retried here
        retrying = Retrying(
            retry=retry_if_exception_type(json.JSONDecodeError),
            stop=stop_after_attempt(1 + self._body_retries),
            wait=wait_random_exponential(multiplier=0.25, max=4.0),
            reraise=True,
        )
        return retrying(lambda: _post_chat(self._clients[0], body))

    def _create_balanced(self, body: dict[str, Any]) -> Any:
        """One request over the pool: a retryable failure moves it to another endpoint."""
        failed_on: set[int] = set()
        error: Exception | None = None
        for attempt in range(1 + self._body_retries):
            index = self.pool.acquire(failed_on)
            if attempt and (index in failed_on or self.pool.resting(index)):
                # nowhere else to go: back off before asking a failed endpoint again
                time.sleep(min(4.0, max(self.pool.resting(index), 0.25 * 2 ** attempt)))
            try:
                out = _post_chat(self._clients[index], body)
            except Exception as exc:  # noqa: BLE001 - sorted below into retry or give up
                retry, down = _retryable(exc)
                self.pool.release(index, ok=False, down=down)
                if not retry:
                    raise
                failed_on.add(index)
                error = exc
                continue
            self.pool.release(index, ok=True)
            return out
        assert error is not None
        raise error

    def complete(self, request: LLMRequest) -> LLMResponse:
        return guarded(self.name, self.model, self._complete, request)

    def _complete(self, request: LLMRequest) -> LLMResponse:
        body = self.request_body(request)
        try:
            out = self._create(body)
        except Exception as exc:  # noqa: BLE001 - after the retries: a recorded failure
            return LLMResponse(error=_api_error(exc), backend=self.name, model=self.model)
        if not getattr(out, "choices", None):
            return LLMResponse(error=f"malformed answer from the server: {str(out)[:300]}", backend=self.name, model=self.model)
        choice = out.choices[0]
        message = choice.message
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "{}")
            for i, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = out.usage
        extra = message.model_extra or {}
        details = getattr(usage, "completion_tokens_details", None)
        response = LLMResponse(
            text=message.content or "",
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            reasoning=str(extra.get("reasoning_content") or extra.get("reasoning") or ""),
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            thinking_tokens=int(getattr(details, "reasoning_tokens", 0) or 0),
            backend=self.name,
            model=self.model,
        )
        return check_output(request, response)

    def thinking_off(self, request: LLMRequest) -> bool:
        if self.disable_thinking == "all":
            return True
        return self.disable_thinking == "structured" and request.output_schema is not None

    def request_body(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body of a ``/chat/completions`` request, as ``chat.completions.create``
        would send it (no endpoint, no key)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_openai_message(m) for m in request.messages],
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            "max_tokens": request.sampling.max_tokens,
            "seed": request.effective_seed(),
        }
        if request.sampling.stop:
            body["stop"] = request.sampling.stop
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools
            ]
            if request.tool_choice:
                body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.output_schema is not None and self.structured != "none":
            if self.structured == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema_name or "answer", "schema": request.output_schema},
                }
            else:
                body["response_format"] = {"type": "json_object", "schema": request.output_schema}
        if self.thinking_off(request):
            # not an OpenAI field: vLLM (and llama.cpp's server) pass it to the chat template
            body["chat_template_kwargs"] = {"enable_thinking": False}
        return body


def _post_chat(client: Any, body: dict[str, Any]) -> Any:
    """One chat completion through the client's public ``post`` (its retries, headers and
    answer parsing), with the body as built here. ``chat.completions.create`` would first
    walk the whole body against its typed parameters (``maybe_transform``), which changes
    nothing in ours (tests/llm/test_llm_spec.py checks that) and was 29% of the SDK's
    CPU per request in a profile against the simulated vLLM server."""
    from openai.types.chat import ChatCompletion

    return client.post("/chat/completions", body=body, cast_to=ChatCompletion)


def _llamacpp_context(url: str) -> int:
    """A llama.cpp server's runtime context per slot (``/props``, at the server's root), or 0."""
    import httpx

    root = url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    try:
        props = httpx.get(f"{root}/props", timeout=5.0).raise_for_status().json()
    except Exception:  # noqa: BLE001 - not a llama.cpp server, or it is down: the window is unknown
        return 0
    if not isinstance(props, dict):
        return 0
    settings = props.get("default_generation_settings")
    value = (settings.get("n_ctx") if isinstance(settings, dict) else None) or props.get("n_ctx")
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


def _tool_choice(choice: str) -> Any:
    if choice in {"auto", "required", "none"}:
        return choice
    return {"type": "function", "function": {"name": choice}}


def _openai_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
        out["content"] = message.content or None
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
    if message.name and message.role != "tool":
        out["name"] = message.name
    return out


def _retryable(exc: Exception) -> tuple[bool, bool]:
    """(retry elsewhere, the endpoint itself is down) for an error from one endpoint."""
    import openai

    if isinstance(exc, openai.APIConnectionError):  # refused, reset, timed out
        return True, True
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in (502, 503, 504):  # a proxy or a server that is starting or going away
            return True, True
        return status in (408, 409, 429) or status >= 500, False
    return isinstance(exc, json.JSONDecodeError), False


def _api_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    prefix = f"HTTP {status} " if status else ""
    return prefix + describe_error(exc)
