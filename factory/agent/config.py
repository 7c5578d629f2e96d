"""Which limits and which calling protocol an episode runs under.

The profile follows the backend's context window (the embedded model has 8,192
tokens, so it gets fewer and shorter results and a smaller round budget); the
protocol follows the backend's capability: OpenAI tool calls where it has them, a
schema-constrained JSON action per turn where it does not.
"""

from __future__ import annotations

from typing import Any, Literal

from factory.settings import AgentLimits, AgentSettings, Settings

Protocol = Literal["tools", "json"]


def agent_settings(settings: Settings | AgentSettings | None) -> AgentSettings:
    if settings is None:
        return AgentSettings()
    if isinstance(settings, AgentSettings):
        return settings
    return settings.agent


def choose_profile(settings: AgentSettings, llm: Any) -> tuple[str, AgentLimits]:
    """The named profile and its limits, with ``max_rounds`` applied."""
    name = settings.profile
    window = int(getattr(llm, "context_tokens", 0) or 0)
    if name == "auto":
        name = "small" if 0 < window <= settings.small_context_max else "standard"
    limits = settings.small if name == "small" else settings.standard
    update: dict[str, Any] = {}
    if settings.max_rounds is not None and settings.max_rounds < limits.rounds:
        update["rounds"] = settings.max_rounds
    if window and limits.round_token_budget > window - limits.max_output_tokens:
        # the round must fit the window together with one completion
        update["round_token_budget"] = max(512, window - limits.max_output_tokens)
    # a plain AgentLimits: traces compare and reload the same whatever profile class it came from
    return name, AgentLimits(**{**limits.model_dump(), **update})


def supports_tools(llm: Any) -> bool:
    """Whether the backend takes OpenAI tools, looking through gateways to the backend.

    An explicit ``supports_tools`` attribute wins. Otherwise the OpenAI-compatible
    backend in its vLLM flavour (schema as ``json_schema``) is taken to support tools,
    as production's vLLM server does; everything else (the embedded llama.cpp model,
    llama.cpp servers, the fake) gets the JSON-action protocol.
    """
    chain = [llm]
    for attr in ("gateway", "backend"):
        nxt = getattr(chain[-1], attr, None)
        if nxt is not None:
            chain.append(nxt)
    nxt = getattr(chain[-1], "backend", None)
    if nxt is not None:
        chain.append(nxt)
    for obj in chain:
        flag = getattr(obj, "supports_tools", None)
        if isinstance(flag, bool):
            return flag
    backend = chain[-1]
    return getattr(backend, "name", "") == "openai" and getattr(backend, "structured", "") == "json_schema"


def choose_protocol(settings: AgentSettings, llm: Any) -> Protocol:
    if settings.protocol != "auto":
        return settings.protocol
    return "tools" if supports_tools(llm) else "json"
