"""The one door every LLM call goes through: cached, logged, bounded, never raising.

* **Cache**: the key is ``LLMRequest.key(model)``: a hash of the canonical request
  (sorted-key JSON, no endpoints, no secrets; the sample index is part of it) and
  the model name. A successful call (``error is None``; a parse failure is the
  model's answer and counts as one) is served from cache afterwards with
  ``cached=True`` and spends no tokens. A failed call is recorded but asked again.
* **Log**: each finished call is one row in ``llm_calls``. Rows are written together
  (group commit): on the first call finishing ``record_every_s`` after the last write,
  and whenever a caller reaches a checkpoint (``flush_records``: a candidate does before
  it writes the drafts and verdicts those calls led to). A SIGKILL loses the calls in
  flight and the finished ones not yet written (about that window's worth while calls
  keep finishing, never one that a stored draft or verdict came from), which a rerun
  asks again; with ``record_every_s=0`` every call is its own segment at once. One
  Parquet segment per call cost about 1.8 ms of CPU more than one row of a shared
  segment, a sixth of the factory's CPU per request against a simulated vLLM server.
  Cache hits are not logged (they cost nothing); ``stats`` counts them.
* **Concurrency**: at most ``concurrency`` backend calls in flight across all
  threads using this gateway; ``complete_many`` keeps that many going and returns
  answers in request order. Two threads asking the same thing share one call.
* **Faults**: an exception from a backend becomes ``LLMResponse(error=...)``; an
  answer that does not follow the requested schema gets one repair request, then is
  returned with ``parse_error`` set. One cut off at ``max_tokens`` is ``truncated``
  (with its figures) and gets no repair: the same budget would cut it off again.
* **Thinking**: tokens a reasoning model spent thinking are part of ``tokens_out`` and
  also counted apart (``thinking_tokens``), per call and in ``llm_usage``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from factory.clock import utc_now
from factory.llm.base import describe_error, guarded
from factory.llm.structured import check_output, merge_repair, repair_request
from factory.llm.types import LLM, LLMRequest, LLMResponse

if TYPE_CHECKING:
    from factory.store import Store


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    parse_errors: int = 0
    truncated: int = 0
    repaired: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    thinking_tokens: int = 0
    latency_s: float = 0.0

    def add(self, response: LLMResponse, *, repaired: bool) -> None:
        self.calls += 1
        self.errors += response.error is not None
        self.parse_errors += response.error is None and response.parse_error is not None
        self.truncated += response.error is None and response.truncated is not None
        self.repaired += repaired
        self.tokens_in += response.tokens_in
        self.tokens_out += response.tokens_out
        self.thinking_tokens += response.thinking_tokens
        self.latency_s += response.latency_s


@dataclass
class GatewayStats:
    total: Usage = field(default_factory=Usage)
    by_stage: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))

    def as_dict(self) -> dict[str, Any]:
        return {"total": vars(self.total), "by_stage": {k: vars(v) for k, v in sorted(self.by_stage.items())}}


class Gateway:
    """Implements the ``LLM`` protocol over a backend, adding cache, log and bounds."""

    def __init__(
        self,
        backend: LLM,
        store: "Store | None" = None,
        *,
        stage_default: str = "",
        concurrency: int = 4,
        run_id: str = "",
        repair: bool = True,
        recheck_store_on_miss: bool = False,
        writer_name: str = "llm",
        compact_over: int = 256,
        record_every_s: float = 0.0,
    ) -> None:
        self.backend = backend
        self.store = store
        self.stage_default = stage_default
        self.concurrency = max(1, int(concurrency))
        self.run_id = run_id
        self.repair = repair
        self.recheck_store_on_miss = recheck_store_on_miss and store is not None
        self.stats = GatewayStats()
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[LLMResponse]] = {}
        self._cache: dict[str, str] = {}
        # the writer's own clock does the group commit: rows appended after record_every_s flush all
        self._writer = (store.writer(writer_name, flush_seconds=record_every_s) if store is not None else None)
        self._record_every_s = record_every_s
        if store is not None:
            # one segment per call adds up; merging them first keeps the start (and every
            # reader of llm_calls) fast. Safe while others write: see Store.compact.
            if len(store.segments("llm_calls")) > compact_over:
                store.compact("llm_calls")
            self._load_cache()

    # the LLM protocol
    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str:
        return self.backend.model

    @property
    def context_tokens(self) -> int:
        return self.backend.context_tokens

    def complete(self, request: LLMRequest, *, stage: str | None = None, item_id: str = "") -> LLMResponse:
        stage = self.stage_default if stage is None else stage
        key = self.key(request)
        hit = self._cached(key)
        if hit is not None:
            self._count_hit(stage)
            return hit
        with self._lock:
            future = self._inflight.get(key)
            owner = future is None
            if owner:
                future = self._inflight[key] = Future()
        assert future is not None
        if not owner:
            shared = future.result().model_copy(update={"cached": True})
            self._count_hit(stage)
            return shared
        try:
            response = self._call(request, key, stage, item_id)
            future.set_result(response)
            return response
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._inflight.pop(key, None)

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        stage: str | None = None,
        item_ids: Sequence[str] | str | None = None,
        concurrency: int | None = None,
    ) -> list[LLMResponse]:
        """Answers in request order, with up to ``concurrency`` calls in flight."""
        if isinstance(item_ids, str) or item_ids is None:
            ids = [item_ids or ""] * len(requests)
        else:
            ids = list(item_ids)
            if len(ids) != len(requests):
                raise ValueError(f"{len(requests)} requests but {len(ids)} item ids")
        if not requests:
            return []
        workers = max(1, min(concurrency or self.concurrency, len(requests)))
        if workers == 1:
            return [self.complete(r, stage=stage, item_id=i) for r, i in zip(requests, ids)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
            return list(pool.map(lambda pair: self.complete(pair[0], stage=stage, item_id=pair[1]), zip(requests, ids)))

    def key(self, request: LLMRequest) -> str:
        """The cache key: the request and the model, plus a backend switch that changes answers."""
        tag = getattr(self.backend, "cache_tag", "")
        return request.key(f"{self.backend.model}\n{tag}" if tag else self.backend.model)

    def bound(self, stage: str, item_id: str = "") -> "BoundGateway":
        """An ``LLM`` that attributes every call to one stage and item."""
        return BoundGateway(self, stage, item_id)

    def usage(self) -> list[dict[str, Any]]:
        """Recorded usage per stage (from the store when there is one, else this process)."""
        if self.store is not None:
            return self.store.query("SELECT * FROM llm_usage ORDER BY stage, backend, model")
        return [{"stage": k, **vars(v)} for k, v in sorted(self.stats.by_stage.items())]

    def flush_records(self) -> None:
        """Write the finished calls not yet in the store (a caller's checkpoint)."""
        if self._writer is not None:
            self._writer.flush("llm_calls")

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    # internals
    def _load_cache(self) -> None:
        assert self.store is not None
        rows = self.store.query("SELECT request_key, response FROM llm_cache")
        self._cache.update({r["request_key"]: r["response"] for r in rows})

    def _cached(self, key: str) -> LLMResponse | None:
        raw = self._cache.get(key)
        if raw is None and self.recheck_store_on_miss:
            assert self.store is not None
            raw = self.store.scalar("SELECT response FROM llm_cache WHERE request_key = ?", [key])
            if raw is not None:
                self._cache[key] = raw
        if raw is None:
            return None
        data = json.loads(raw) if isinstance(raw, str) else raw
        response = LLMResponse.model_validate(data)
        response.cached = True
        return response

    def _count_hit(self, stage: str) -> None:
        with self._lock:
            self.stats.total.cache_hits += 1
            self.stats.by_stage[stage].cache_hits += 1

    def _call(self, request: LLMRequest, key: str, stage: str, item_id: str) -> LLMResponse:
        started = utc_now()
        with self._slots:
            t0 = time.perf_counter()
            response = self._checked(request, self._ask(request))
            attempts, repaired = 1, False
            if self.repair and response.error is None and response.parse_error is not None:
                second = self._checked(request, self._ask(repair_request(request, response)))
                attempts, repaired = 2, second.ok
                response = merge_repair(response, second)
            wall = time.perf_counter() - t0
        response.cached = False
        response.latency_s = response.latency_s or wall
        self._record(key, request, response, stage, item_id, started, attempts, repaired)
        if response.error is None:
            with self._lock:
                self._cache[key] = json.dumps(response.model_dump(mode="json", exclude={"cached"}))
        with self._lock:
            self.stats.total.add(response, repaired=repaired)
            self.stats.by_stage[stage].add(response, repaired=repaired)
        return response

    @staticmethod
    def _checked(request: LLMRequest, response: LLMResponse) -> LLMResponse:
        try:
            return check_output(request, response)
        except Exception as exc:  # noqa: BLE001 - a checker bug must not kill a run either
            response.error = f"checking the answer failed: {describe_error(exc)}"
            return response

    def _ask(self, request: LLMRequest) -> LLMResponse:
        return guarded(self.backend.name, self.backend.model, self.backend.complete, request)

    def _record(
        self,
        key: str,
        request: LLMRequest,
        response: LLMResponse,
        stage: str,
        item_id: str,
        started: datetime,
        attempts: int,
        repaired: bool,
    ) -> None:
        if self._writer is None:
            return
        row = {
            "call_id": uuid.uuid4().hex,
            "request_key": key,
            "stage": stage,
            "item_id": item_id,
            "backend": response.backend or self.backend.name,
            "model": self.backend.model,
            "sample_index": request.sample_index,
            "request": request.model_dump(mode="json"),
            "response": response.model_dump(mode="json", exclude={"cached"}),
            "text": response.text,
            "ok": response.ok,
            "error": response.error,
            "parse_error": response.parse_error,
            "attempts": attempts,
            "repaired": repaired,
            "tokens_in": response.tokens_in,
            "tokens_out": response.tokens_out,
            "thinking_tokens": response.thinking_tokens,
            "truncated": response.truncated,
            "max_tokens": request.sampling.max_tokens,
            "latency_s": response.latency_s,
            "started_at": started,
            "run_id": self.run_id,
        }
        self._writer.append("llm_calls", [row])  # flushed by the writer's clock (record_every_s)
        if self._record_every_s <= 0:
            self._writer.flush("llm_calls")


class BoundGateway:
    """A gateway view with a fixed stage and item id; implements the ``LLM`` protocol."""

    def __init__(self, gateway: Gateway, stage: str, item_id: str = "") -> None:
        self.gateway = gateway
        self.stage = stage
        self.item_id = item_id

    @property
    def name(self) -> str:
        return self.gateway.name

    @property
    def model(self) -> str:
        return self.gateway.model

    @property
    def context_tokens(self) -> int:
        return self.gateway.context_tokens

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.gateway.complete(request, stage=self.stage, item_id=self.item_id)

    def complete_many(self, requests: Sequence[LLMRequest], *, concurrency: int | None = None) -> list[LLMResponse]:
        return self.gateway.complete_many(requests, stage=self.stage, item_ids=self.item_id, concurrency=concurrency)
