"""Dedup, early: a draft that duplicates a task the run knows is rejected before any costly check.

A duplicate is the same support set, or a near-duplicate question about the same thing (a
shared support passage or the answer: ``factory.task_similarity``).
The driver makes the final decision when it settles a candidate, in candidate order,
against every task accepted before it; only it sees them all. This check runs inside the
candidate, right after the schema, against the tasks known when the candidate was drawn
(``ValidationContext.duplicate_of``, from the generation context): those do not depend on
timing, so the run's tasks stay the same at any concurrency. A duplicate of one of them
would be rejected at settling too; finding it here saves the validators' calls and the
agent run. Outside a run (no task list) the check is a recorded skip.
"""

from __future__ import annotations

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, skipped, verdict


class DedupValidator:
    name = "dedup"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        if ctx.duplicate_of is None:
            return skipped(self.name, "no_task_list", "no accepted tasks to compare with (outside a generation run)")
        found = ctx.duplicate_of(draft.question, draft.support_chunk_ids, draft.answer)
        if found is None:
            return verdict(self.name, True)
        return verdict(self.name, False, found.kind, found.describe(), of=found.of, jaccard=found.jaccard)
