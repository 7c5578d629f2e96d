"""Judging a candidate's draft: the gauntlet, then prune, revise, reselect or reject, until it passes.

``judge`` is the one place a draft is judged; nothing else decides what a failed
gauntlet leads to. Its seams, each a small function:

* ``next_step(history, ...)``: what a failure leads to. A decorative chunk is pruned (up
  to ``generate.max_prunes``) unless that leaves the cell fewer passages than it needs:
  then the reviser is asked to make the question need it. A failure a rewrite can fix is
  revised (up to ``generate.max_revisions``). A failure only a new subgraph can fix (an
  answer a model knows without evidence, or a composer that declined the passages: no honest
  question on them) reselects (up to ``generate.max_reselections``), and the answer goes to
  the store's refused_answers, which later runs' selectors draw from no more.
  Anything else is rejected, with its verdict as the reason.
* ``revise_draft(history, ...)``: the reviser sees every draft judged so far with its
  verdicts, oldest first.
* ``prune_draft(draft, chunk_id)``: the draft without one support chunk (and its steps).
* the loop in ``judge``: where a step is taken; a reselection drafts a new subgraph of the
  same cell through ``redraft`` and judges that draft from the start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from factory.compose.composer import revise
from factory.generate.drafting import Drafted
from factory.llm.types import TRUNCATED
from factory.records import Draft, Subgraph, Verdict
from factory.validate.base import ValidationContext
from factory.validate.gauntlet import GauntletResult, run_gauntlet

# verdict reasons that a rewrite cannot fix: reject at once instead of spending a revision
# (a truncated answer needs a larger budget or thinking switched off: the user's settings)
UNREVISABLE = {"llm_error", "validator_error", "agent_error", "parse_error", "truncated"}
# verdict reasons only another subgraph can fix: the answer is fixed by the selection, or the
# composer found no honest question on the passages (it declined: schema's no_honest_question)
RESELECT = {"closed_book_solved", "no_honest_question"}
# the early duplicate check's reasons: rejected at once, as the driver rejects a duplicate when it settles
DUPLICATE = {"near_duplicate_question", "same_support"}


class DraftLog(Protocol):
    """Where a candidate records its drafts and verdicts as they happen, and counts its steps."""

    prunes: int
    revisions: int
    reselections: int

    def record_draft(self, draft: Draft, origin: str, parent: Draft | None) -> None: ...

    def record_verdict(self, draft: Draft, step: int, verdict: Verdict) -> None: ...

    def record_refused(self, subgraph: Subgraph, draft: Draft, verdict: Verdict) -> None: ...


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
    action: Literal["prune", "revise", "reselect", "reject"]
    chunk_id: str | None = None  # prune: the chunk to drop


def next_step(history: list[Judged], *, prunes: int, revisions: int, reselections: int, limits: Any,
              min_support: int = 2) -> Step:
    """What the last failed gauntlet leads to (``limits``: ``settings.generate``;
    ``min_support``: the passages the draft's cell needs)."""
    draft, failure = history[-1].draft, history[-1].result.failure
    assert failure is not None
    decorative = [c for c in failure.figures.get("decorative", []) if c != draft.answer_chunk_id]
    if not failure.hard and decorative:
        if prunes < limits.max_prunes and len(draft.support_chunk_ids) - 1 >= min_support:
            return Step("prune", decorative[0])
        # pruning would leave the cell too few passages: a rewrite that needs them may not
        return Step("revise") if revisions < limits.max_revisions else Step("reject")
    if failure.reason in RESELECT:
        return Step("reselect") if reselections < limits.max_reselections else Step("reject")
    reason = "parse_error" if draft.parse_error and not draft.parse_error.startswith(TRUNCATED) else failure.reason
    if reason in UNREVISABLE or reason in DUPLICATE or revisions >= limits.max_revisions:
        return Step("reject")
    return Step("revise")


def prune_draft(draft: Draft, chunk_id: str) -> Draft:
    attempt = draft.attempt + 1
    return draft.model_copy(update={
        "support_chunk_ids": [c for c in draft.support_chunk_ids if c != chunk_id],
        "steps": [s for s in draft.steps if s.chunk_id != chunk_id],
        "attempt": attempt, "draft_id": f"{draft.candidate_id}-a{attempt}",
    })


def revise_draft(history: list[Judged], drafted: Drafted, llm: Any, settings: Any, lang: str) -> Draft:
    c = settings.compose
    return revise([(j.draft, j.result.verdicts) for j in history], drafted.sheet, drafted.spec, llm, lang,
                  temperature=c.compose_temperature, max_tokens=c.max_tokens, searchable=drafted.searchable)


def judge(drafted: Drafted, *, validation: ValidationContext, validators: list, settings: Any, llm: Any,
          lang: str, log: DraftLog,
          redraft: Callable[[set[frozenset[str]], set[str]], Drafted] | None = None) -> Judgement:
    """Run the gauntlet on ``drafted.draft`` and act on each failure until it passes or is rejected.

    ``validation`` is the candidate's own context (its item id, subgraph and metered
    LLM); every draft and verdict goes to ``log`` as it lands. ``redraft(avoid, known)``
    selects a new subgraph for the same cell (none of the support sets ``avoid`` nor one that
    mostly shares their passages, no answer of ``known``) and drafts it, for a reselection: a
    known answer stays known whatever the passages, so every subgraph and answer reselected
    away from stays avoided.
    """
    judgement = Judgement()
    draft = drafted.draft
    assert draft is not None
    tried: set[frozenset[str]] = set()
    known: set[str] = set()
    while True:
        result = run_gauntlet(draft, validation, validators,
                              on_verdict=lambda step, v, d=draft: log.record_verdict(d, step, v))
        judgement.history.append(Judged(draft, result))
        if result.passed:
            return judgement
        step = next_step(judgement.history, prunes=log.prunes, revisions=log.revisions,
                         reselections=log.reselections, limits=settings.generate,
                         min_support=validation.min_support(draft.cell.mechanic))
        answer = drafted.subgraph.answer_entity if drafted.subgraph is not None else None
        if answer and result.failure is not None and result.failure.reason in RESELECT:
            log.record_refused(drafted.subgraph, draft, result.failure)  # later runs draw it no more
        if step.action == "reselect" and redraft is not None:
            tried.add(frozenset(draft.support_chunk_ids))
            if drafted.subgraph is not None:  # the whole subgraph, where pruning left part of it
                tried.add(frozenset(drafted.subgraph.chunk_ids))
            if answer:
                known.add(answer)
            again = redraft(set(tried), set(known))
            log.reselections += 1
            if again.draft is None:  # no other subgraph, or its fact sheet failed: the failure stands
                return judgement
            drafted = again
            validation = validation.for_item(validation.item_id, again.subgraph)
            judgement.history.clear()  # a new subgraph: the reviser starts from its own first draft
            log.record_draft(again.draft, "reselect", None)
            draft = again.draft
            continue
        if step.action in ("reject", "reselect"):
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
