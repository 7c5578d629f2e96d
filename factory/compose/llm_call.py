"""Calling any ``LLM`` from the composer: stage and item id go to those that take them."""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

from factory.llm.types import LLMRequest, LLMResponse


@lru_cache(maxsize=64)
def _takes_tags(kind: type) -> bool:
    try:
        params = inspect.signature(kind.complete).parameters
    except (TypeError, ValueError):
        return False
    return "stage" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_llm(llm: Any, request: LLMRequest, stage: str, item_id: str) -> LLMResponse:
    """``llm.complete(request)``, tagged for the gateway's log; a raising backend becomes an error."""
    try:
        if _takes_tags(type(llm)):
            return llm.complete(request, stage=stage, item_id=item_id)
        return llm.complete(request)
    except Exception as exc:  # noqa: BLE001 - a failed call is a recorded outcome, not a crash
        return LLMResponse(error=f"{type(exc).__name__}: {exc}")
