"""Judging the reference set: each candidate's drafts through the gauntlet, in order."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from factory.records import Record, Verdict
from factory.reference.records import ReferenceCandidate, Status

MODEL_FREE = ("schema", "answerable", "leakage", "shortcut")  # the validators that judge without a model


class Judgement(Record):
    """What the gauntlet does with one reference candidate, draft by draft as the loop would."""

    index: int
    cell: str
    status: Status
    accepted_at: int | None = Field(None, description="the draft (0 = first) the gauntlet accepted")
    verdicts: list[list[Verdict]] = Field(default_factory=list)
    reason: str = Field("", description="why it ends rejected: validator:reason, or the candidate's status")

    @property
    def first(self) -> bool:
        return self.accepted_at == 0

    def within(self, revisions: int) -> bool:
        return self.accepted_at is not None and self.accepted_at <= revisions


def reference_context(store: Any, index: Any, settings: Any) -> Any:
    """The validation context the generation loop would build, minus the LLM and the agent."""
    from factory.validate.base import StoreChunks, ValidationContext, store_entity_names

    kinds = ["bm25"] + (["dense", "hybrid"] if getattr(index, "has_dense", False) else [])
    searchers = {k: index.searcher(k) for k in kinds if k in settings.validation.shortcut_searchers}
    ctx = ValidationContext(settings=settings.validation, chunks=StoreChunks(store), searchers=searchers,
                            entity_names=store_entity_names(store))
    ctx.get_lexicon()
    return ctx


def judge_candidate(candidate: ReferenceCandidate, ctx: Any, validators: list[Any]) -> Judgement:
    """Its drafts through ``validators`` in order: a revision counts only if every draft
    before it was refused (a loop never revises an accepted draft)."""
    from factory.validate.gauntlet import run_gauntlet

    out = Judgement(index=candidate.index, cell=candidate.cell, status=candidate.status)
    if candidate.status != "drafted" or not candidate.drafts:
        out.reason = candidate.status
        return out
    vctx = ctx.for_item(f"ref-{candidate.lang}-{candidate.index:03d}", candidate.subgraph)
    for i in range(len(candidate.drafts)):
        result = run_gauntlet(candidate.draft(i), vctx, validators)
        out.verdicts.append(result.verdicts)
        if result.passed:
            out.accepted_at = i
            out.reason = ""
            return out
        failure = result.failure
        out.reason = f"{failure.validator}:{failure.reason}" if failure else "no_verdict"
    return out
