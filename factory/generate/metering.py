"""The tokens one candidate spends: the figure its ``candidates`` row records.

The run's token budget counts these (``candidates.tokens``), so the number a run
stops at is the number the store shows for it, whichever runner ran it. Cache hits
cost nothing. The search agent of the difficulty check calls the run's LLM itself,
not through this meter: its calls are in ``llm_calls``, not in the budget.
"""

from __future__ import annotations

import threading
from typing import Any


class Metered:
    """Counts a candidate's tokens; passes stage and item ids on to a gateway, and nothing
    extra to a bare backend."""

    def __init__(self, llm: Any) -> None:
        self.inner = llm
        self.tokens = 0
        self.cached = 0  # answers served from the gateway's cache
        self._lock = threading.Lock()
        self._tagged = hasattr(llm, "complete_many")  # the gateway (or a bound view of it)

    name = property(lambda self: self.inner.name)
    model = property(lambda self: self.inner.model)
    context_tokens = property(lambda self: self.inner.context_tokens)

    def _count(self, responses: list[Any]) -> None:
        with self._lock:
            self.tokens += sum(r.tokens_in + r.tokens_out for r in responses if not r.cached)
            self.cached += sum(1 for r in responses if r.cached)

    def complete(self, request: Any, *, stage: str | None = None, item_id: str = "") -> Any:
        if self._tagged and not hasattr(self.inner, "stage"):
            response = self.inner.complete(request, stage=stage, item_id=item_id)
        else:
            response = self.inner.complete(request)
        self._count([response])
        return response

    def complete_many(self, requests: list[Any], *, stage: str | None = None, item_ids: Any = None,
                      concurrency: int | None = None) -> list[Any]:
        if self._tagged and not hasattr(self.inner, "stage"):
            responses = self.inner.complete_many(requests, stage=stage, item_ids=item_ids, concurrency=concurrency)
        elif self._tagged:
            responses = self.inner.complete_many(requests, concurrency=concurrency)
        else:
            responses = [self.inner.complete(r) for r in requests]
        self._count(list(responses))
        return list(responses)
