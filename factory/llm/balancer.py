"""Spreading requests over several endpoints that serve one model, with failover.

``openai:URL1,URL2,...#MODEL`` names several servers (one vLLM per GPU machine, say).
Each request goes to the endpoint with the fewest requests in flight (fewest sent so far
breaks ties, then list order), so a slow or busy server gets less work than a round-robin
would give it. An endpoint whose request fails at the connection level (refused, reset,
timed out, or a 502/503/504 from a proxy in front of it) *rests*: it is skipped until its
rest ends, then tried again; each further failure in a row doubles the rest up to a cap,
and one success ends it. When every endpoint rests, the one whose rest ends first is
tried (a probe), so a run never stalls only because all servers restarted at once.

The pool only keeps the books; the backend asks it which endpoint to use, and tells it
how the request went. Thread-safe: the candidates in flight share one pool.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable


@dataclass
class EndpointState:
    url: str
    in_flight: int = 0
    sent: int = 0
    ok: int = 0
    failed: int = 0
    failures_in_row: int = 0
    rest_until: float = 0.0


class EndpointPool:
    def __init__(
        self,
        urls: Iterable[str],
        *,
        cooldown_s: float = 2.0,
        max_cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoints = [EndpointState(url) for url in urls]
        if not self.endpoints:
            raise ValueError("an endpoint pool needs at least one URL")
        self.cooldown_s = cooldown_s
        self.max_cooldown_s = max_cooldown_s
        self._clock = clock
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.endpoints)

    def acquire(self, avoid: Iterable[int] = ()) -> int:
        """The endpoint for the next request (counted as in flight until ``release``).

        ``avoid``: endpoints this request already failed on; they are used again only
        when nothing else is left.
        """
        avoid = set(avoid)
        with self._lock:
            now = self._clock()
            order = range(len(self.endpoints))
            awake = [i for i in order if self.endpoints[i].rest_until <= now]
            pick = self._least_busy([i for i in awake if i not in avoid])
            if pick is None:  # every endpoint rests or failed this request: probe the one waking first
                fresh = [i for i in order if i not in avoid] or list(order)
                pick = min(fresh, key=lambda i: (self.endpoints[i].rest_until, i))
            state = self.endpoints[pick]
            state.in_flight += 1
            state.sent += 1
            return pick

    def _least_busy(self, choices: list[int]) -> int | None:
        if not choices:
            return None
        return min(choices, key=lambda i: (self.endpoints[i].in_flight, self.endpoints[i].sent, i))

    def release(self, index: int, *, ok: bool, down: bool = False) -> None:
        """The request on ``index`` ended: ``ok``, or failed (``down``: the endpoint itself failed)."""
        with self._lock:
            state = self.endpoints[index]
            state.in_flight = max(0, state.in_flight - 1)
            if ok:
                state.ok += 1
                state.failures_in_row = 0
                state.rest_until = 0.0
                return
            state.failed += 1
            if down:
                state.failures_in_row += 1
                rest = min(self.max_cooldown_s, self.cooldown_s * 2 ** (state.failures_in_row - 1))
                state.rest_until = self._clock() + rest

    def resting(self, index: int) -> float:
        """Seconds until ``index`` may be used again (0 when it is awake)."""
        with self._lock:
            return max(0.0, self.endpoints[index].rest_until - self._clock())

    def snapshot(self) -> list[dict[str, object]]:
        with self._lock:
            now = self._clock()
            return [
                {"url": s.url, "in_flight": s.in_flight, "sent": s.sent, "ok": s.ok, "failed": s.failed,
                 "resting_s": round(max(0.0, s.rest_until - now), 3)}
                for s in self.endpoints
            ]
