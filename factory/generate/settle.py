"""The driver of a run: draws each candidate's cell and settles candidates, in candidate order.

Both live here because both read what the run accepted so far; see
``factory.generate.scheduler`` for why both happen in one place and in order. Only
this module samples cells, checks duplicates and writes tasks.

The state a draw sees is indexed by candidate: candidate ``i`` drawn with
``settled_upto = i - lookahead`` counts the cells of candidates ``0 .. i - 1`` as
drawn, and the acceptances and unsupported cells of candidates ``0 .. settled_upto``
only. After a kill the store holds more than that (candidates that finished ahead of
the oldest unsettled one); filtering by index makes the resumed run draw exactly
what the uninterrupted one drew.

The sampler and the duplicate check also start from the run's scope (``TaskScope``):
for a training run, the whole training set. Settling a candidate that passed the
gauntlet happens under the scope's lock and first reads the tasks other runs of the
set accepted meanwhile, so concurrent runs never accept duplicates of each other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from factory.clock import utc_now
from factory.generate.outcome import CandidateOutcome
from factory.generate.scheduler import Job
from factory.generate.scope import TaskScope
from factory.records import Cell
from factory.task_similarity import TaskDeduper
from factory.taxonomy import CellSampler, load_taxonomy

# rows another run wrote shortly before our last look may carry an earlier _written_at
# (it is set when a row is buffered, not when its segment lands): look back this far
REFRESH_OVERLAP = timedelta(minutes=10)


@dataclass(frozen=True)
class Settled:
    """What a settled candidate of this run means for later draws."""

    cell: str | None
    support: tuple[str, ...] | None = None  # accepted: its support set
    unsupported: str | None = None  # rejected because the corpus can never satisfy the cell: why


class Settler:
    def __init__(self, store: Any, settings: Any, *, lang: str, run_id: str, seed: int, scope: TaskScope,
                 taxonomy: Any = None) -> None:
        self.store, self.settings, self.lang, self.run_id, self.seed, self.scope = (
            store, settings, lang, run_id, seed, scope)
        self.started_at = utc_now()  # workers count the scope's other tasks written before this
        taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
        self.cells, self.cut_short, self.history = self._read_run(store)
        self.deduper = TaskDeduper(settings.generate.dedup_jaccard, settings.generate.dedup_perm)
        rows = scope.accepted(store)
        cut_ids = set(self.cut_short.values())
        outside: Counter[str] = Counter()
        for row in rows:
            if row["task_id"] in cut_ids:
                continue  # its task row landed, its 'accepted' row did not: it settles again
            if row["run_id"] != run_id:
                outside[row["cell"]] += 1
            self.deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], row["answer"], lang)
        self.known = {row["task_id"] for row in rows}
        # the other runs of the scope count whole; this run's candidates are counted by index (draw)
        self.sampler = CellSampler(taxonomy, seed, lang, dict(outside), drawn=scope.drawn(store, others=True))
        for key, reason in scope.unsupported(store, others=True).items():
            self.sampler.mark_unsupported(Cell.parse(key), reason)
        self._drawn_upto = 0  # cells of candidates below this are counted as drawn
        self._applied_upto = -1  # settled candidates up to this are counted in the sampler
        # (index, support set, task id, question, answer) of the tasks this try accepted
        self.accepted_here: list[tuple[int, tuple[str, ...], str, str, str]] = []
        self.refreshed_at = self.started_at
        self.writer = store.writer(f"settle-{run_id}")

    def _read_run(self, store: Any) -> tuple[dict[int, str], dict[int, str], dict[int, Settled]]:
        """This run's candidates as earlier tries left them: cells, those cut short, those finished."""
        rows = store.query("SELECT c.idx, c.candidate_id, c.cell, c.status, c.reason, c.feedback, t.support_chunk_ids "
                           "FROM candidates c LEFT JOIN tasks t ON t.task_id = c.task_id "
                           "WHERE c.run_id = ? AND c.idx IS NOT NULL", [self.run_id])
        cells = {int(r["idx"]): r["cell"] for r in rows if r["cell"]}
        # a candidate cut short keeps the cell it drew when it runs again
        cut_short = {int(r["idx"]): r["candidate_id"] for r in rows if r["status"] == "started" and r["cell"]}
        history = {}
        for r in rows:
            if r["status"] == "accepted":
                history[int(r["idx"])] = Settled(r["cell"], support=tuple(r["support_chunk_ids"] or ()))
            elif r["status"] == "rejected":
                history[int(r["idx"])] = Settled(r["cell"], unsupported=(r["feedback"] or "") if r["reason"] ==
                                                 "unsupported_cell" else None)
        return cells, cut_short, history

    # ------------------------------------------------------------------ draws
    def draw(self, index: int, settled_upto: int) -> Job:
        """Candidate ``index``'s cell, seeing the run's candidates up to ``settled_upto`` settled."""
        for upto in range(self._applied_upto + 1, settled_upto + 1):
            settled = self.history.get(upto)
            if settled is None or settled.cell is None:
                continue  # failed (a rerun tries it again), or finished before it drew a cell
            if settled.support is not None:
                self.sampler.record_accepted(Cell.parse(settled.cell))
            if settled.unsupported is not None:
                self.sampler.mark_unsupported(Cell.parse(settled.cell), settled.unsupported)
        self._applied_upto = max(self._applied_upto, settled_upto)
        for before in range(self._drawn_upto, index):  # finished by an earlier try: not drawn again
            if before in self.cells:
                self._count_drawn(self.cells[before])
        if index in self.cut_short:
            cell = self.cells[index]
            self._count_drawn(cell)
        else:
            cell = self.sampler.draw(index).key  # counts itself as drawn
            self.cells[index] = cell
        self._drawn_upto = index + 1
        seen = [a for a in self.accepted_here if a[0] <= settled_upto]
        return Job(index=index, cell=cell, settled_upto=settled_upto, avoid=tuple(a[1] for a in seen),
                   questions=tuple((a[2], a[3], a[4]) for a in seen))

    def _count_drawn(self, cell: str) -> None:
        self.sampler.drawn[cell] = self.sampler.drawn.get(cell, 0) + 1

    # --------------------------------------------------------------- settling
    def settle(self, outcome: CandidateOutcome) -> CandidateOutcome:
        if outcome.status != "passed":
            unsupported = outcome.feedback if outcome.reason == "unsupported_cell" else None
            self.history[outcome.index] = Settled(outcome.cell, unsupported=unsupported)
            return outcome
        with self.scope.settling(self.store):
            self._refresh()
            final = self._accept_unless_duplicate(outcome)
        if final.status == "accepted":
            task = outcome.task
            support = tuple(task.support_chunk_ids) if task else ()
            self.accepted_here.append((outcome.index, support, task.task_id if task else final.candidate_id,
                                       task.question if task else "", task.answer if task else ""))
            self.history[outcome.index] = Settled(outcome.cell, support=support)
            self.known.add(final.candidate_id)
        else:
            self.history[outcome.index] = Settled(outcome.cell)
        return final

    def _accept_unless_duplicate(self, outcome: CandidateOutcome) -> CandidateOutcome:
        task = outcome.task
        assert task is not None
        duplicate = self.deduper.check_and_add(outcome.candidate_id, task.question, task.support_chunk_ids, task.answer,
                                               task.lang)
        if duplicate is not None:
            final = outcome.settled(status="rejected", stage="dedup", validator="dedup", reason=duplicate.kind,
                                    feedback=duplicate.describe(), task_id=None)
            self.writer.append("candidates", [final.row()])
            self.writer.flush()
            return final
        final = outcome.settled(status="accepted")
        self.writer.append("tasks", [task])
        self.writer.flush("tasks")  # before the candidate's 'accepted' row: a kill between them must not lose the task
        self.writer.append("candidates", [final.row()])
        self.writer.flush()
        return final

    def _refresh(self) -> None:
        """Tasks other runs of the training set accepted since the last look."""
        if self.scope.training_set is None:
            return
        now = utc_now()
        for row in self.scope.accepted(self.store, since=self.refreshed_at - REFRESH_OVERLAP):
            if row["task_id"] in self.known or row["run_id"] == self.run_id:
                continue
            self.known.add(row["task_id"])
            self.deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], row["answer"],
                             self.lang)
            self.sampler.record_accepted(Cell.parse(row["cell"]))
        self.refreshed_at = now

    def close(self) -> None:
        self.writer.close()
