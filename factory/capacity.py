"""How many candidates and backend calls a run keeps in flight, and how far it draws ahead.

One function, ``resolve_concurrency``, turns ``generate.concurrency``, ``llm.concurrency``
and ``generate.lookahead`` (each a number, or ``auto``) into numbers; the run's limits
(``factory.generate.scheduler.RunLimits``) and the gateway factory
(``factory.llm.registry.make_gateway``) both ask it, so the two never disagree.

``auto`` keeps a server full: a server (an ``openai`` spec: vLLM, in production) batches
up to ``llm.server_capacity`` sequences (vLLM's ``--max-num-seqs``; vLLM does not report
it, hence a setting), and a candidate has about one request out on average
(bench/throughput.py), so as many candidates as the server has slots fill it; the memory
they take caps them (``generate.memory_budget_mb``). Twice as many backend calls as
candidates may be out, so the gateway never binds before the candidates do. The embedded
llama.cpp backend serialises requests and the fakes answer at once: one candidate and four
calls, as before ``auto`` existed.

The lookahead never follows the concurrency: the tasks depend on it (see the scheduler),
so a run gives the same tasks at any concurrency. It caps candidates in flight, and it must
exceed them to keep them in flight: a slow candidate at the head of the window holds back
the draws behind it, so with a lookahead equal to the concurrency the slots run empty while
it finishes. bench/throughput.py, at 64 in flight against the simulated server (24,000
prefill tokens/s, where the slots bind): lookahead 64 kept 0.64 of the slots busy, 128 kept
0.84 (70% of the ideal accepted tasks/h), 256 keeps 0.996 (93%); a single point at 384 gave
0.995. For a server it is four times the capacity: the window is only outcomes waiting to
settle, and peak memory did not grow with it (846 MB at 256 against 847 MB at 128).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factory.llm.spec import parse_spec

# measured by bench/throughput.py (ru-wikinews, simulated vLLM server): the peak memory
# of a run grows by about this much per candidate in flight
CANDIDATE_MB = 5.1
SERIAL = {"candidates": 1, "llm_calls": 4, "lookahead": 4}  # embedded backend and fakes
LOOKAHEAD_PER_SLOT = 4  # a server's auto lookahead, per slot (see above)
SERVER_BACKENDS = {"openai"}


@dataclass(frozen=True)
class Concurrency:
    candidates: int  # candidates in flight wanted (the lookahead caps what runs)
    llm_calls: int  # backend calls in flight at once, per gateway
    lookahead: int  # candidates drawn ahead of the oldest unsettled one
    server: bool  # the backend is a server that batches (auto fills it)

    @property
    def in_flight(self) -> int:
        return min(self.candidates, self.lookahead)


def is_server(spec: str) -> bool:
    return parse_spec(spec).backend in SERVER_BACKENDS


def resolve_concurrency(llm: Any, generate: Any, *, spec: str | None = None,
                        candidates: int | None = None) -> Concurrency:
    """The numbers for ``llm`` (``settings.llm``) and ``generate`` (``settings.generate``);
    ``spec`` defaults to ``llm.spec``, ``candidates`` (a flag) beats ``generate.concurrency``.
    An explicit number always wins over ``auto``."""
    server = is_server(spec or llm.spec)
    wanted = candidates if candidates is not None else generate.concurrency
    if wanted == "auto":
        if server:
            by_memory = max(1, int(generate.memory_budget_mb / CANDIDATE_MB))
            wanted = min(llm.server_capacity, by_memory)
        else:
            wanted = SERIAL["candidates"]
    calls = llm.concurrency
    if calls == "auto":
        calls = 2 * int(wanted) if server else SERIAL["llm_calls"]
    lookahead = generate.lookahead
    if lookahead == "auto":
        lookahead = LOOKAHEAD_PER_SLOT * llm.server_capacity if server else SERIAL["lookahead"]
    return Concurrency(candidates=int(wanted), llm_calls=int(calls), lookahead=int(lookahead), server=server)
