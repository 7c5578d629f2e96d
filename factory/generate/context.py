"""What a run's candidates share in one process, built once: store, index, LLM, validators.

In a flow, a job (``Job``) and a ``ContextSpec`` are small and picklable, so they
travel to a thread of this process or to a Dask worker on another machine alike. The
worker opens the store, the fixed index and its own LLM gateway the first time it sees
a run (``context_for``), keeps them for the run's later jobs, and writes its rows
(candidate steps, drafts, verdicts, LLM calls) as its own segments: the store's
concurrent-writer design is what lets many workers write at once. ``factory generate``
builds one context from the objects it already holds (``make_context``).

The support sets a candidate must not select again: the tasks of the scope's other
runs written before the run started, this run's tasks accepted up to the job's
``settled_upto`` (read from the store, by candidate index), and those the driver
accepted since (sent with the job). So a worker that starts late selects exactly as
one that started first, and a resumed run as an uninterrupted one. The same tasks are
what a candidate's draft is checked against early for duplicates (``duplicates``, the
gauntlet's ``dedup``), before any expensive validator: a duplicate of a task accepted
after the draw is only found when the driver settles the candidate.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from factory.generate.scheduler import Job
from factory.generate.scope import TaskScope
from factory.graph.select import SelectionIndex
from factory.index.fixed import FixedIndex
from factory.llm.gateway import Gateway
from factory.task_similarity import Duplicate, TaskDeduper
from factory.taxonomy import load_taxonomy
from factory.validate.base import IndexChunks, StoreChunks, ValidationContext, store_entity_names
from factory.validate.gauntlet import build_validators

KEEP_CONTEXTS = 2  # runs whose contexts a long-lived worker keeps open


@dataclass
class CandidateContext:
    """Everything a candidate needs; shared by all candidates of a run in a process (thread-safe)."""

    store: Any
    index: Any
    llm: Any
    settings: Any
    lang: str
    run_id: str
    seed: int  # the seed of the candidates' random streams
    taxonomy: Any
    selection: Any  # the loaded SelectionIndex
    validation: ValidationContext
    validators: list
    writer: Any
    # writes the LLM calls not yet in the store (a gateway groups its call rows); called at each
    # candidate checkpoint, before the candidate's own rows. An LLM that records nothing: a no-op
    flush_calls: Callable[[], None] = lambda: None
    outside: set[frozenset[str]] = field(default_factory=set)  # support sets of the scope's other runs
    run_accepted: list[tuple[int, frozenset[str]]] = field(default_factory=list)  # this run's, by candidate index
    # every task above, and those jobs brought, sketched once per process for the early duplicate check
    known: TaskDeduper = field(default_factory=TaskDeduper)
    outside_ids: set[str] = field(default_factory=set)
    run_accepted_ids: list[tuple[int, str]] = field(default_factory=list)  # (candidate index, task id)
    # this run's candidates that had finished when the context was built (by id): a job for one
    # of them returns its outcome (the driver does not hand them out; a context serves one try)
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)

    def candidate_id(self, index: int) -> str:
        return f"{self.run_id}-s{self.seed}-{index:05d}"

    def avoid(self, job: Job) -> set[frozenset[str]]:
        mine = {support for index, support in self.run_accepted if index <= job.settled_upto}
        return self.outside | mine | {frozenset(chunks) for chunks in job.avoid}

    def duplicates(self, job: Job) -> Callable[[str, Sequence[str], str], Duplicate | None]:
        """The early duplicate check of ``job``'s drafts: against the tasks it selects away from."""
        for (task_id, question, answer), support in zip(job.questions, job.avoid):
            self.known.add(task_id, question, support, answer, self.lang)
        among = (self.outside_ids | {task for index, task in self.run_accepted_ids if index <= job.settled_upto}
                 | {task_id for task_id, _, _ in job.questions})

        def duplicate_of(question: str, support: Sequence[str], answer: str) -> Duplicate | None:
            return self.known.find(question, support, answer, self.lang, among=among)

        return duplicate_of

    def close(self) -> None:
        self.writer.close()


def make_context(store: Any, index: Any, llm: Any, settings: Any, *, lang: str, run_id: str, seed: int,
                 scope: TaskScope | None = None, cutoff: datetime | None = None, taxonomy: Any = None,
                 difficulty: Any = None) -> CandidateContext:
    scope = scope or TaskScope(run_id=run_id, lang=lang)
    searchers = {}
    if index is not None:
        kinds = ["bm25"] + (["dense", "hybrid"] if getattr(index, "has_dense", False) else [])
        searchers = {kind: index.searcher(kind) for kind in kinds if kind in settings.validation.shortcut_searchers}
    # the candidates' rows and their agent episodes share one writer, flushed at each candidate's checkpoint
    writer = store.writer(f"generate-{run_id}")
    if difficulty is None and settings.validation.agent_run and index is not None:
        from factory.agent.difficulty import DifficultyChecker

        difficulty = DifficultyChecker(index, llm, settings, store, writer=writer)
    chunks = StoreChunks(store)
    if isinstance(index, FixedIndex):  # the run's texts without a query per candidate
        chunks = IndexChunks(index, chunks)
    validation = ValidationContext(settings=settings.validation, chunks=chunks, searchers=searchers,
                                   llm=llm, entity_names=store_entity_names(store), difficulty=difficulty)
    validation.get_lexicon()  # built once from the corpus, before candidates run in parallel
    g = settings.generate
    known = TaskDeduper(g.dedup_jaccard, g.dedup_perm)
    others = [row for row in scope.accepted(store, before=cutoff) if row["run_id"] != run_id]
    mine = store.query("SELECT c.idx, t.task_id, t.question, t.answer, t.support_chunk_ids FROM tasks t JOIN candidates c "
                       "ON c.candidate_id = t.candidate_id WHERE t.run_id = ? AND c.status = 'accepted'", [run_id])
    for row in [*others, *mine]:
        known.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], row["answer"], lang)
    finished = store.query("SELECT * FROM candidates WHERE run_id = ? AND status IN ('accepted', 'rejected')",
                           [run_id])
    return CandidateContext(
        store=store, index=index, llm=llm, settings=settings, lang=lang, run_id=run_id, seed=seed,
        taxonomy=taxonomy or load_taxonomy(settings.compose.taxonomy_dir), selection=SelectionIndex.load(store, lang),
        validation=validation, validators=build_validators(settings.validation.order),
        writer=writer, flush_calls=llm.flush_records if isinstance(llm, Gateway) else (lambda: None),
        outside={frozenset(row["support_chunk_ids"] or []) for row in others},
        run_accepted=[(int(r["idx"]), frozenset(r["support_chunk_ids"] or [])) for r in mine],
        known=known, outside_ids={row["task_id"] for row in others},
        run_accepted_ids=[(int(r["idx"]), r["task_id"]) for r in mine],
        finished={r["candidate_id"]: r for r in finished},
    )


# ------------------------------------------------------------ in a worker process
@dataclass(frozen=True)
class ContextSpec:
    """How a worker process builds a run's context (small and picklable)."""

    store: str
    index_dir: str
    settings_json: str  # every field explicit, so a worker's environment cannot change them
    lang: str
    run_id: str
    seed: int  # the run's stream seed
    training_set: str | None = None
    cutoff: datetime | None = None  # the scope's other tasks written before the run started count for avoidance

    @property
    def key(self) -> tuple[str, int, str, datetime | None]:
        # by try too: a worker that outlives a driver builds a fresh context for the next try
        # (what the run accepted meanwhile is in the store, not in the old context)
        return (self.run_id, self.seed, self.store, self.cutoff)


_CONTEXTS: "OrderedDict[tuple[str, int, str, datetime | None], tuple[CandidateContext, Any]]" = OrderedDict()
_LOCK = threading.Lock()


def context_for(spec: ContextSpec) -> CandidateContext:
    """This process's context for the run (built on first use, then reused)."""
    with _LOCK:  # the first job builds it; the others of this process wait for it
        if spec.key in _CONTEXTS:
            _CONTEXTS.move_to_end(spec.key)
            return _CONTEXTS[spec.key][0]
        ctx, gateway = _build(spec)
        _CONTEXTS[spec.key] = (ctx, gateway)
        while len(_CONTEXTS) > KEEP_CONTEXTS:
            _close(*_CONTEXTS.popitem(last=False)[1])
        return ctx


def _build(spec: ContextSpec) -> tuple[CandidateContext, Any]:
    from factory.index.fixed import open_index
    from factory.llm.registry import make_gateway
    from factory.settings import Settings
    from factory.store import Store

    settings = Settings(**json.loads(spec.settings_json))
    store = Store(spec.store)
    index = open_index(Path(spec.index_dir), store=store, settings=settings)
    gateway = make_gateway(settings.llm.spec, settings, store, run_id=spec.run_id,
                           record_every_s=settings.llm.record_every_s)
    try:
        scope = TaskScope(run_id=spec.run_id, lang=spec.lang, training_set=spec.training_set)
        ctx = make_context(store, index, gateway, settings, lang=spec.lang, run_id=spec.run_id, seed=spec.seed,
                           scope=scope, cutoff=spec.cutoff)
    except BaseException:
        gateway.close()
        raise
    return ctx, gateway


def _close(ctx: CandidateContext, gateway: Any) -> None:
    ctx.close()
    gateway.close()


def close_contexts(run_id: str | None = None) -> int:
    """Flush and close this process's contexts (of one run, or all); returns how many."""
    with _LOCK:
        keys = [k for k in _CONTEXTS if run_id is None or k[0] == run_id]
        for key in keys:
            _close(*_CONTEXTS.pop(key))
    return len(keys)
