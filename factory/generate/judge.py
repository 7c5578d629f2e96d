"""Judging a candidate's draft: the gauntlet, then prune, revise or reject, until it passes.

``judge`` is the one place a draft is judged; nothing else decides what a failed
gauntlet leads to. Its seams, each a small function:

* ``next_step(history, ...)``: what a failure leads to. Today: a decorative chunk is
  pruned (up to ``generate.max_prunes``), a failure a rewrite can fix is revised (up
  to ``generate.max_revisions``), anything else is rejected. A draft pruned below a
  multi-hop cell's minimum is rejected.
* ``revise_draft(history, ...)``: what the reviser is shown. ``history`` holds every
  draft judged so far with its verdicts, in order; today the reviser reads the last.
* ``prune_draft(draft, chunk_id)``: the draft without one support chunk.
* the loop in ``judge``: where a new kind of step goes (for example selecting another
  subgraph when only a new one can fix the failure: ``drafted`` holds the cell, the
  subgraph and the fact sheet the candidate started from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from factory.compose.composer import revise
from factory.generate.drafting import Drafted
from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext
from factory.validate.gauntlet import GauntletResult, run_gauntlet

# verdict reasons that a rewrite cannot fix: reject at once instead of spending a revision
UNREVISABLE = {"llm_error", "validator_error", "agent_error", "parse_error"}


class DraftLog(Protocol):
    """Where a candidate records its drafts and verdicts as they happen, and counts its steps."""

    prunes: int
    revisions: int

    def record_draft(self, draft: Draft, origin: str, parent: Draft | None) -> None: ...

    def record_verdict(self, draft: Draft, step: int, verdict: Verdict) -> None: ...


@dataclass
class Judged:
    """One draft through the gauntlet."""

    draft: Draft
    result: GauntletResult


@dataclass
class Judgement:
    history: list[Judged] = field(default_factory=list)

    @property
    def last(self) -> Judged:
        return self.history[-1]

    @property
    def passed(self) -> bool:
        return self.last.result.passed

    @property
    def failure(self) -> Verdict | None:
        return self.last.result.failure


@dataclass(frozen=True)
class Step:
    action: Literal["prune", "revise", "reject"]
    chunk_id: str | None = None  # prune: the chunk to drop


def next_step(history: list[Judged], *, prunes: int, revisions: int, limits: Any) -> Step:
    """What the last failed gauntlet leads to (``limits``: ``settings.generate``)."""
    draft, failure = history[-1].draft, history[-1].result.failure
    assert failure is not None
    decorative = [c for c in failure.figures.get("decorative", []) if c != draft.answer_chunk_id]
    if not failure.hard and decorative and prunes < limits.max_prunes:
        return Step("prune", decorative[0])
    reason = "parse_error" if draft.parse_error else failure.reason
    # pruned below a multi-hop cell's minimum: a rewrite cannot bring the chunks back
    pruned_away = failure.reason == "not_multi_hop" and prunes > 0
    if reason in UNREVISABLE or pruned_away or revisions >= limits.max_revisions:
        return Step("reject")
    return Step("revise")


def prune_draft(draft: Draft, chunk_id: str) -> Draft:
    attempt = draft.attempt + 1
    return draft.model_copy(update={
        "support_chunk_ids": [c for c in draft.support_chunk_ids if c != chunk_id],
        "attempt": attempt, "draft_id": f"{draft.candidate_id}-a{attempt}",
    })


def revise_draft(history: list[Judged], drafted: Drafted, llm: Any, settings: Any, lang: str) -> Draft:
    last = history[-1]
    c = settings.compose
    return revise(last.draft, last.result.verdicts, drafted.sheet, drafted.spec, llm, lang,
                  temperature=c.compose_temperature, max_tokens=c.max_tokens)


def judge(drafted: Drafted, *, validation: ValidationContext, validators: list, settings: Any, llm: Any,
          lang: str, log: DraftLog) -> Judgement:
    """Run the gauntlet on ``drafted.draft`` and act on each failure until it passes or is rejected.

    ``validation`` is the candidate's own context (its item id, subgraph and metered
    LLM); every draft and verdict goes to ``log`` as it lands.
    """
    judgement = Judgement()
    draft = drafted.draft
    assert draft is not None
    while True:
        result = run_gauntlet(draft, validation, validators,
                              on_verdict=lambda step, v, d=draft: log.record_verdict(d, step, v))
        judgement.history.append(Judged(draft, result))
        if result.passed:
            return judgement
        step = next_step(judgement.history, prunes=log.prunes, revisions=log.revisions, limits=settings.generate)
        if step.action == "reject":
            return judgement
        if step.action == "prune":
            new = prune_draft(draft, step.chunk_id or "")
            log.prunes += 1
            log.record_draft(new, "prune", draft)
        else:
            new = revise_draft(judgement.history, drafted, llm, settings, lang)
            log.revisions += 1
            log.record_draft(new, "revise", draft)
        draft = new
