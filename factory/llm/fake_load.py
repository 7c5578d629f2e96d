"""A load model of a vLLM server, for the fake server: continuous batching on a (scaled) clock.

* **Capacity**: at most ``capacity`` sequences in flight (vLLM's ``--max-num-seqs``);
  a request beyond it waits in a first-come queue and joins the batch when one ends.
* **Prefill**: the batch shares one prefill rate (tokens/s); prompts are prefilled in
  arrival order, one at a time, while the sequences already decoding go on decoding.
* **Decode**: every sequence in flight (prefilling ones included: they hold their slot
  and KV cache) slows the others down. A step of the batch takes ``t0 + k * n`` seconds
  for ``n`` sequences, one token each, fitted so that one sequence alone decodes
  ``decode_alone`` tokens/s and a full batch ``decode_full`` tokens/s per sequence
  (defaults: 60 and 25 at 64 in flight, the order of an 8B to 35B model on one GPU).
* **Clock**: virtual seconds run ``scale`` times faster than real ones, so a bench can
  play an hour of serving in three minutes; every figure is in virtual seconds.

The engine is a fluid simulation: between events (a prefill ends, a sequence ends, a
request arrives) every rate is constant, so the state is advanced exactly, event by
event. ``stats()`` gives cumulative figures (the integral of sequences in flight over
time among them): utilisation over any window is the difference of two snapshots.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class LoadModel:
    capacity: int = 64
    prefill_tps: float = 8000.0
    decode_alone: float = 60.0  # tokens/s of one sequence alone
    decode_full: float = 25.0  # tokens/s of each sequence at capacity

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.prefill_tps <= 0 or not 0 < self.decode_full <= self.decode_alone:
            raise ValueError(f"bad load model {self}: need capacity >= 1, prefill > 0, 0 < decode_full <= decode_alone")

    @property
    def _k(self) -> float:
        if self.capacity == 1:
            return 0.0
        return (1 / self.decode_full - 1 / self.decode_alone) / (self.capacity - 1)

    def step_s(self, n: int) -> float:
        """Seconds per decode step of a batch of ``n`` sequences."""
        return 1 / self.decode_alone + self._k * (max(1, n) - 1)

    def decode_rate(self, n: int) -> float:
        """Tokens/s of each sequence when ``n`` are in flight."""
        return 1 / self.step_s(n)

    def latency_alone(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens / self.prefill_tps + completion_tokens / self.decode_alone

    def bounds(self, mean_prompt: float, mean_completion: float) -> dict[str, float]:
        """Requests/s the server can finish for a request mix, kept full, by what limits it:
        the prefill rate (every prompt must be prefilled), and the slots (each request holds
        one for its own prefill plus its decode at the full-batch rate, ``capacity`` at once)."""
        slot_s = mean_prompt / self.prefill_tps + mean_completion / self.decode_full
        return {"prefill": self.prefill_tps / mean_prompt if mean_prompt > 0 else float("inf"),
                "slots": self.capacity / slot_s if slot_s > 0 else float("inf")}

    def ideal_requests_per_s(self, mean_prompt: float, mean_completion: float) -> float:
        """The most requests/s the server can finish for a request mix: the lower bound wins."""
        return min(self.bounds(mean_prompt, mean_completion).values())

    def as_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "prefill_tps": self.prefill_tps, "decode_alone": self.decode_alone,
                "decode_full": self.decode_full}


@dataclass
class Sequence:
    prompt: int
    completion: int
    arrived: float
    prefill_left: float = 0.0
    decode_left: float = 0.0
    admitted: float | None = None
    finished: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def queue_s(self) -> float:
        return (self.admitted or self.arrived) - self.arrived

    @property
    def latency_s(self) -> float:
        return (self.finished or self.arrived) - self.arrived


class BatchEngine:
    """The load model run on a clock; ``run(prompt, completion)`` blocks for the request's turn."""

    def __init__(self, model: LoadModel | None = None, *, scale: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if scale <= 0:
            raise ValueError("scale must be > 0")
        self.model = model or LoadModel()
        self.scale = scale
        self._clock = clock
        self._t0 = clock()
        self._cond = threading.Condition()
        self._queue: deque[Sequence] = deque()
        self._active: list[Sequence] = []
        self._last = 0.0  # virtual time the state was last advanced to
        self._stopped = False
        self._reset_counters(0.0)
        self._thread = threading.Thread(target=self._loop, name="fake-vllm-engine", daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------- clients
    def now(self) -> float:
        """Virtual seconds since the engine started."""
        return (self._clock() - self._t0) * self.scale

    def submit(self, prompt_tokens: int, completion_tokens: int) -> Sequence:
        with self._cond:
            now = self.now()
            self._advance(now)
            seq = Sequence(max(0, int(prompt_tokens)), max(1, int(completion_tokens)), arrived=now,
                           prefill_left=float(max(0, int(prompt_tokens))), decode_left=float(max(1, int(completion_tokens))))
            self._first = now if self._first is None else self._first
            self._arrived += 1
            self._queue.append(seq)
            self._admit(now)
            self._cond.notify_all()
        return seq

    def run(self, prompt_tokens: int, completion_tokens: int, timeout_s: float | None = None) -> Sequence:
        """Submit and wait (in real time) until the sequence has finished in virtual time."""
        seq = self.submit(prompt_tokens, completion_tokens)
        seq.done.wait(timeout_s)
        return seq

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            for seq in [*self._active, *self._queue]:  # nobody waits forever on a stopped server
                seq.done.set()
            self._cond.notify_all()
        self._thread.join(timeout=5)

    def reset_stats(self) -> None:
        with self._cond:
            now = self.now()
            self._advance(now)
            self._reset_counters(now)

    def stats(self) -> dict[str, Any]:
        """Cumulative figures since the last reset, in virtual seconds (a snapshot)."""
        with self._cond:
            now = self.now()
            self._advance(now)
            busy_end = now if (self._active or self._queue) else (self._last_done or now)
            window = max(0.0, busy_end - self._first) if self._first is not None else 0.0
            done = self._done
            return {
                "now_s": now, "scale": self.scale, "model": self.model.as_dict(),
                "requests": done, "arrived": self._arrived, "in_flight": len(self._active),
                "queued": len(self._queue), "max_in_flight": self._max_active, "max_queued": self._max_queued,
                "busy_window_s": window, "seq_s": self._seq_s, "queue_seq_s": self._queued_s,
                "utilisation": self._seq_s / (self.model.capacity * window) if window > 0 else 0.0,
                "prompt_tokens": self._prompt, "completion_tokens": self._completion,
                "mean_queue_s": self._queue_wait / done if done else 0.0,
                "mean_latency_s": self._latency / done if done else 0.0,
            }

    # ---------------------------------------------------------------- the model
    def _reset_counters(self, now: float) -> None:
        self._since = now
        self._first: float | None = now if (self._active or self._queue) else None
        self._last_done: float | None = None
        self._seq_s = self._queued_s = 0.0  # integrals of sequences in flight / queued over time
        self._done = self._arrived = self._max_active = self._max_queued = 0
        self._prompt = self._completion = 0
        self._queue_wait = self._latency = 0.0

    def _admit(self, now: float) -> None:
        while self._queue and len(self._active) < self.model.capacity:
            seq = self._queue.popleft()
            seq.admitted = now
            self._active.append(seq)
        self._max_active = max(self._max_active, len(self._active))
        self._max_queued = max(self._max_queued, len(self._queue))

    def _rates(self) -> tuple[Sequence | None, float]:
        """The sequence being prefilled (first come) and the decode rate of the others."""
        prefilling = next((s for s in self._active if s.prefill_left > 0), None)
        return prefilling, self.model.decode_rate(len(self._active))

    def _next_event(self) -> float | None:
        """Virtual seconds from ``_last`` to the next prefill or sequence end (None: idle)."""
        if not self._active:
            return None
        prefilling, rate = self._rates()
        times = [s.decode_left / rate for s in self._active if s.prefill_left <= 0]
        if prefilling is not None:
            times.append(prefilling.prefill_left / self.model.prefill_tps)
        return min(times) if times else None

    def _advance(self, to: float) -> None:
        """Move the fluid state from ``_last`` to virtual time ``to``, event by event."""
        while self._last < to:
            step = self._next_event()
            dt = to - self._last if step is None else min(step, to - self._last)
            prefilling, rate = self._rates()
            for seq in self._active:
                if seq is prefilling:
                    seq.prefill_left = max(0.0, seq.prefill_left - dt * self.model.prefill_tps)
                elif seq.prefill_left <= 0:
                    seq.decode_left = max(0.0, seq.decode_left - dt * rate)
            self._seq_s += dt * len(self._active)
            self._queued_s += dt * len(self._queue)
            self._last += dt
            if step is not None and step <= dt + 1e-12:
                self._finish(self._last)
        self._last = max(self._last, to)

    def _finish(self, now: float) -> None:
        ended = [s for s in self._active if s.prefill_left <= 1e-9 and s.decode_left <= 1e-9]
        for seq in self._active:
            if seq.prefill_left <= 1e-9:
                seq.prefill_left = 0.0
        if not ended:
            return
        self._active = [s for s in self._active if s not in ended]
        for seq in ended:
            seq.finished = now
            self._done += 1
            self._prompt += seq.prompt
            self._completion += seq.completion
            self._queue_wait += seq.queue_s
            self._latency += seq.latency_s
            seq.done.set()
        self._last_done = now
        self._admit(now)

    def _loop(self) -> None:
        with self._cond:
            while not self._stopped:
                now = self.now()
                self._advance(now)
                step = self._next_event()
                # sleep (in real seconds) until the next event, or until a request arrives
                self._cond.wait(None if step is None else max(step / self.scale, 0.0005))
