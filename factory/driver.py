"""The driver of a run: draws each candidate's cell and settles candidates, in order.

See ``factory/ordered.py`` for why both happen in one place and in candidate order. The
driver's sampler and duplicate check start from the run's scope (``TaskScope``): the
run's own earlier tries for a benchmark build, the whole training set for a training
run. Settling a candidate that passed the gauntlet happens under the scope's lock and
first reads the tasks other runs of the set accepted meanwhile, so concurrent runs never
accept duplicates of each other.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from factory.generate import CandidateOutcome, settle_passed
from factory.ordered import Job
from factory.records import Cell
from factory.settings import Settings
from factory.training_set import TaskScope, utc_now
from factory.task_similarity import TaskDeduper

# rows another run wrote shortly before our last look may carry an earlier _written_at
# (it is set when a row is buffered, not when its segment lands): look back this far
REFRESH_OVERLAP = timedelta(minutes=10)


class RunDriver:
    def __init__(self, store: Any, settings: Settings, *, lang: str, run_id: str, seed: int, scope: TaskScope,
                 taxonomy: Any = None) -> None:
        from factory.taxonomy import CellSampler, load_taxonomy

        self.store, self.settings, self.lang, self.run_id, self.seed, self.scope = (
            store, settings, lang, run_id, seed, scope)
        self.started_at = utc_now()  # workers count the scope's tasks written before this
        taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
        # a candidate cut short keeps the cell it drew (counted as drawn below) when it runs again
        cut = store.query("SELECT idx, cell, candidate_id FROM candidates WHERE run_id = ? AND status = 'started' "
                          "AND cell IS NOT NULL", [run_id])
        self.cut_short = {int(r["idx"]): r["cell"] for r in cut}
        cut_ids = {r["candidate_id"] for r in cut}
        rows = scope.accepted(store)
        accepted: dict[str, int] = {}
        self.deduper = TaskDeduper(settings.generate.dedup_jaccard, settings.generate.dedup_perm)
        for row in rows:
            if row["task_id"] in cut_ids:
                continue  # its task row landed, its 'accepted' row did not: it settles again
            accepted[row["cell"]] = accepted.get(row["cell"], 0) + 1
            self.deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], lang)
        self.known = {row["task_id"] for row in rows}
        self.sampler = CellSampler(taxonomy, seed, lang, accepted, drawn=scope.drawn(store))
        for key, reason in scope.unsupported(store).items():
            self.sampler.mark_unsupported(Cell.parse(key), reason)
        self.accepted_here: list[tuple[str, ...]] = []  # support sets this try accepted, in settling order
        self.refreshed_at = self.started_at
        self.writer = store.writer(f"settle-{run_id}")

    # ------------------------------------------------------------------ draws
    def draw(self, index: int) -> Job:
        cell = self.cut_short.get(index) or self.sampler.draw(index).key
        return Job(index=index, cell=cell, avoid=tuple(self.accepted_here))

    # --------------------------------------------------------------- settling
    def settle(self, outcome: CandidateOutcome) -> CandidateOutcome:
        if outcome.status != "passed":
            if outcome.reason == "unsupported_cell" and outcome.cell:
                self.sampler.mark_unsupported(Cell.parse(outcome.cell), outcome.feedback)
            return outcome
        support = tuple(outcome.pending["task"]["support_chunk_ids"]) if outcome.pending else ()
        with self.scope.settling(self.store):
            self._refresh()
            final = settle_passed(self, outcome)
        if final.status == "accepted":
            self.accepted_here.append(support)
            self.known.add(final.candidate_id)
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
            self.deduper.add(row["task_id"], row["question"], row["support_chunk_ids"] or [], self.lang)
            self.sampler.record_accepted(Cell.parse(row["cell"]))
        self.refreshed_at = now

    def close(self) -> None:
        self.writer.close()
