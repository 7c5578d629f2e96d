"""How a candidate ended, and the ``candidates`` row that says so.

A candidate's row is written at each state change (``started``, then ``accepted`` or
``rejected``); ``CandidateOutcome.row()`` is the one place that row is built. A
candidate that passed the gauntlet comes back as ``passed`` with its ``Task``, not yet
written: only the driver settles it (``factory.generate.settle``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from factory.records import Task

FINAL = ("accepted", "rejected")


@dataclass
class CandidateOutcome:
    candidate_id: str
    run_id: str
    index: int
    seed: int
    lang: str
    status: str  # started | passed | accepted | rejected
    cell: str | None = None
    stage: str = ""  # started | select | facts | gauntlet | dedup | error | accepted
    validator: str | None = None
    reason: str = ""
    feedback: str = ""
    attempts: int = 0
    revisions: int = 0
    prunes: int = 0
    task_id: str | None = None
    tokens: int = 0
    elapsed_s: float = 0.0
    cached_calls: int = 0
    final_draft_id: str | None = None
    subgraph: dict[str, Any] | None = None
    resumed: bool = False  # read back from the store: finished by an earlier try
    task: Task | None = None  # status "passed": the task the driver may accept

    def row(self) -> dict[str, Any]:
        """The candidate's row in the ``candidates`` table."""
        return {
            "candidate_id": self.candidate_id, "run_id": self.run_id, "idx": self.index, "seed": self.seed,
            "lang": self.lang, "cell": self.cell, "status": self.status, "stage": self.stage,
            "validator": self.validator, "reason": self.reason, "feedback": self.feedback,
            "final_draft_id": self.final_draft_id, "attempts": self.attempts, "revisions": self.revisions,
            "prunes": self.prunes, "task_id": self.task_id, "tokens": self.tokens, "elapsed_s": self.elapsed_s,
            "subgraph": self.subgraph,
        }

    def settled(self, **changes: Any) -> "CandidateOutcome":
        """The outcome as the driver settled it (the task is written by then, or rejected)."""
        return replace(self, task=None, **changes)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "CandidateOutcome":
        """A candidate an earlier try finished, as its row says (spent nothing this time)."""
        return cls(
            candidate_id=row["candidate_id"], run_id=row["run_id"], index=row["idx"], seed=row["seed"],
            lang=row["lang"], status=row["status"], cell=row["cell"], stage=row["stage"] or "",
            validator=row["validator"], reason=row["reason"] or "", feedback=row["feedback"] or "",
            attempts=row["attempts"] or 0, revisions=row["revisions"] or 0, prunes=row["prunes"] or 0,
            task_id=row["task_id"], final_draft_id=row["final_draft_id"], resumed=True,
        )
