"""Which limits and which calling protocol an episode runs under.

The profile follows the backend's context window (the embedded model has 8,192
tokens, so it gets fewer and shorter results and a smaller round budget); the
protocol follows the backend's capability: OpenAI tool calls where it has them,
schema-constrained JSON actions where it does not.

The window is what the backend reports (a llama.cpp server's runtime context, vLLM's
``max_model_len``); a backend that reports none gets ``agent.fallback_context_tokens``
and the episode's trace says so. A round's budget never exceeds the window less one
completion and a safety margin, so a context whose tokens were underestimated still fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from factory.settings import AgentLimits, AgentSettings, Settings

Protocol = Literal["tools", "json"]


def agent_settings(settings: Settings | AgentSettings | None) -> AgentSettings:
    if settings is None:
        return AgentSettings()
    if isinstance(settings, AgentSettings):
        return settings
    return settings.agent


@dataclass(frozen=True)
class Profile:
    name: str
    limits: AgentLimits
    window: int
    window_source: str  # backend | settings
    warning: str = ""


def choose_profile(settings: AgentSettings, llm: Any) -> Profile:
    """The named profile and its limits (``max_rounds`` and the window applied)."""
    reported = int(getattr(llm, "context_tokens", 0) or 0)
    window = reported or settings.fallback_context_tokens
    warning = "" if reported else (
        f"the backend reported no context window; assumed {window:,} tokens (agent.fallback_context_tokens). "
        "Give the real one with the spec option context=TOKENS or llm.context_tokens."
    )
    name = settings.profile
    if name == "auto":
        name = "small" if window <= settings.small_context_max else "standard"
    limits = settings.small if name == "small" else settings.standard
    update: dict[str, Any] = {}
    if settings.max_rounds is not None and settings.max_rounds < limits.rounds:
        update["rounds"] = settings.max_rounds
    room = int(window * (1 - settings.window_margin_share)) - limits.max_output_tokens
    if limits.round_token_budget > room:
        # the round must fit the window together with one completion and the margin
        update["round_token_budget"] = max(512, room)
    # a plain AgentLimits: traces compare and reload the same whatever profile class it came from
    return Profile(name, AgentLimits(**{**limits.model_dump(), **update}), window,
                   "backend" if reported else "settings", warning)


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
