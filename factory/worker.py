"""The worker side of a run: build the generation context once per process, run jobs.

A job (``factory.ordered.Job``) and a ``WorkerSpec`` are small and picklable, so they
travel to a thread of this process or to a Dask worker on another machine alike. The
worker opens the store, the fixed index and its own LLM gateway the first time it sees
a run, keeps them for the run's later jobs, and writes its rows (candidate steps,
drafts, verdicts, LLM calls) as its own segments: the store's concurrent-writer design
is what lets many workers write at once. The driver settles what passed.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from factory.ordered import Job

KEEP_CONTEXTS = 2  # runs whose contexts a long-lived worker keeps open


@dataclass(frozen=True)
class WorkerSpec:
    store: str
    index_dir: str
    settings_json: str  # every field explicit, so a worker's environment cannot change them
    lang: str
    run_id: str
    seed: int  # the run's stream seed
    training_set: str | None = None
    cutoff: datetime | None = None  # the scope's tasks written before the run started count for avoidance

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.run_id, self.seed, self.store)


_CONTEXTS: "OrderedDict[tuple[str, int, str], tuple[Any, Any]]" = OrderedDict()
_LOCK = threading.Lock()


def worker_context(spec: WorkerSpec) -> Any:
    """This process's generation context for the run (built on first use, then reused)."""
    with _LOCK:  # the first job builds it; the others of this process wait for it
        if spec.key in _CONTEXTS:
            _CONTEXTS.move_to_end(spec.key)
            return _CONTEXTS[spec.key][0]
        ctx, gateway = _build(spec)
        _CONTEXTS[spec.key] = (ctx, gateway)
        while len(_CONTEXTS) > KEEP_CONTEXTS:
            _close(*_CONTEXTS.popitem(last=False)[1])
        return ctx


def _build(spec: WorkerSpec) -> tuple[Any, Any]:
    from pathlib import Path

    from factory.generate import make_context
    from factory.index.fixed import open_index
    from factory.llm.registry import make_gateway
    from factory.settings import Settings
    from factory.store import Store
    from factory.training_set import TaskScope
    from factory.task_similarity import TaskDeduper

    settings = Settings(**json.loads(spec.settings_json))
    store = Store(spec.store)
    index = open_index(Path(spec.index_dir), store=store, settings=settings)
    gateway = make_gateway(settings.llm.spec, settings.llm, store, run_id=spec.run_id)
    try:
        ctx = make_context(store, index, gateway, settings, lang=spec.lang, run_id=spec.run_id, seed=spec.seed)
    except BaseException:
        gateway.close()
        raise
    # support sets to avoid: the scope's tasks from before the run started, whenever this
    # worker joins (the driver sends those accepted since with each job), so a worker that
    # starts late selects exactly as one that started first
    ctx.deduper = TaskDeduper(settings.generate.dedup_jaccard, settings.generate.dedup_perm)
    scope = TaskScope(run_id=spec.run_id, lang=spec.lang, training_set=spec.training_set)
    for row in scope.accepted(store, before=spec.cutoff):
        ctx.deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], spec.lang)
    return ctx, gateway


def _close(ctx: Any, gateway: Any) -> None:
    ctx.writer.close()
    gateway.close()


def close_contexts(run_id: str | None = None) -> int:
    """Flush and close this process's contexts (of one run, or all); returns how many."""
    with _LOCK:
        keys = [k for k in _CONTEXTS if run_id is None or k[0] == run_id]
        for key in keys:
            _close(*_CONTEXTS.pop(key))
    return len(keys)


def run_job(job: Job, spec: WorkerSpec) -> Any:
    """Run one candidate; one that passes the gauntlet comes back for the driver to settle."""
    from factory.generate import generate_candidate
    from factory.records import Cell

    ctx = worker_context(spec)
    return generate_candidate(job.index, ctx, cell=Cell.parse(job.cell), avoid=job.avoid, defer=True)
