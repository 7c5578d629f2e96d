"""What every backend adapter shares: turning any exception into a failed response."""

from __future__ import annotations

import time
from typing import Callable

from factory.llm.types import LLMRequest, LLMResponse


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip().replace("\n", " ")
    return f"{type(exc).__name__}: {text[:500]}" if text else type(exc).__name__


def guarded(backend: str, model: str, call: Callable[[LLMRequest], LLMResponse], request: LLMRequest) -> LLMResponse:
    """Run one backend call; an exception becomes ``LLMResponse(error=...)`` (nothing raises into a run)."""
    start = time.perf_counter()
    try:
        response = call(request)
    except Exception as exc:  # noqa: BLE001 - the point is to catch everything a backend throws
        response = LLMResponse(error=describe_error(exc))
    response.backend = response.backend or backend
    response.model = response.model or model
    response.latency_s = response.latency_s or time.perf_counter() - start
    return response
