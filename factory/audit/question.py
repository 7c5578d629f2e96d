"""One audited question: the draft it was read as, the answer chunks, and every verdict.

Shared by the audit run, its summary and its card (each reads it; none of them is
imported by it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factory.audit.checks import ERROR_REASONS
from factory.audit.inputs import AuditQuestion
from factory.records import Draft, Verdict


@dataclass
class QuestionAudit:
    question: AuditQuestion
    draft: Draft
    answer_chunks: list[str]
    verdicts: list[Verdict] = field(default_factory=list)

    @staticmethod
    def status(v: Verdict) -> str:
        if v.skipped:
            return "skip"
        if v.ok:
            return "pass"
        return "error" if v.reason in ERROR_REASONS else "flag"

    def names(self, status: str) -> list[str]:
        return [v.validator for v in self.verdicts if self.status(v) == status]

    @property
    def flagged(self) -> bool:
        return bool(self.names("flag"))

    def best_rank(self) -> int | None:
        """Best rank of an answer passage (else any support passage) in a broad query's top k."""
        shortcut = next((v for v in self.verdicts if v.validator == "shortcut" and not v.skipped), None)
        if shortcut is None:
            return None
        ranks: list[int] = []
        for row in (shortcut.figures.get("searchers") or {}).values():
            found = row.get("ranks") or {}
            wanted = [r for c, r in found.items() if c in self.answer_chunks] or list(found.values())
            ranks.extend(int(r) for r in wanted)
        return min(ranks) if ranks else None

    def record(self) -> dict[str, Any]:
        q = self.question
        return {
            "qid": q.qid, "question": q.text, "answer": q.answer, "answers": q.answers,
            "support_chunk_ids": self.draft.support_chunk_ids, "answer_chunk_ids": self.answer_chunks,
            "bridge_entities": q.bridge_entities, "flagged": self.flagged, "flagged_by": self.names("flag"),
            "skipped": self.names("skip"), "errors": self.names("error"), "best_rank": self.best_rank(),
            "verdicts": {
                v.validator: {"status": self.status(v), "reason": v.reason, "feedback": v.feedback,
                              "figures": v.figures, "elapsed_s": round(v.elapsed_s, 4)}
                for v in self.verdicts
            },
        }


def severity(item: QuestionAudit) -> tuple:
    rank = item.best_rank()
    return (-len(item.names("flag")), rank if rank is not None else 1 << 20, item.question.qid)
