"""Questions as drafts, and which validator can run on what the benchmark gives.

A question becomes a ``Draft`` (cell ``audit/unknown/unknown`` unless the benchmark
names one; support = its positively judged passages; answer and aliases from the
file). The gauntlet's validators then run unchanged, except two audit-specific pieces:

* ``schema`` checks what an outside file can get wrong (no text, judged ids missing
  from the corpus, an answer that is not short); the generator's own demands (an
  answer chunk id, a multi-hop support set) do not apply to someone else's tasks.
* ``shortcut`` knows which judged passages hold the answer (``answer_chunk_ids``
  below) and flags a question when any of them is in a broad query's top k, or when
  the configured share of the support set is.

The answer chunks, by ``audit.answer_chunks``:

* ``auto``: the ``answer_chunk_id`` the benchmark gives (our own exports do); else the
  only judged passage of a one-passage question (a single-hop question is answered by
  its gold passage); else the judged passages whose text contains the answer; else
  none, and only the share-of-support rule applies.
* ``all``: every judged passage (single-hop sets whose passages are alternatives).
* ``none``: only the share-of-support rule.
"""

from __future__ import annotations

from typing import Callable

from factory.audit.inputs import AuditQuestion
from factory.records import Cell, Draft, Verdict
from factory.validate.base import ValidationContext, skipped, verdict
from factory.validate.matching import normalize_answer
from factory.validate.shortcut import ShortcutValidator
from factory.validate.tokens import tokenize

AUDIT_CELL = "audit/unknown/unknown"
ALL_VALIDATORS = ("schema", "answerable", "leakage", "shortcut", "closed_book", "solvability", "necessity",
                  "agent_run")
LLM_VALIDATORS = {"closed_book", "solvability", "necessity", "agent_run"}
ANSWER_VALIDATORS = {"closed_book", "solvability", "necessity"}
ERROR_REASONS = {"llm_error", "validator_error", "agent_error"}


def answer_chunk_ids(question: AuditQuestion, rule: str, texts: dict[str, str], lang: str) -> list[str]:
    support = list(dict.fromkeys(question.support))
    if rule == "none":
        return []
    if rule == "all":
        return support
    if question.answer_chunk_id and question.answer_chunk_id in support:
        return [question.answer_chunk_id]
    if len(support) == 1:
        return support
    keys = [k for k in (normalize_answer(a, lang) for a in question.answers) if k]
    if not keys:
        return []
    holding = []
    for chunk_id in support:
        text = f" {normalize_answer(texts.get(chunk_id, ''), lang)} "
        if any(f" {key} " in text for key in keys):
            holding.append(chunk_id)
    return holding


def to_draft(question: AuditQuestion, lang: str, answer_chunks: list[str]) -> Draft:
    try:
        cell = Cell.parse(question.cell) if question.cell else Cell.parse(AUDIT_CELL)
    except ValueError:
        cell = Cell.parse(AUDIT_CELL)
    return Draft(
        draft_id=f"audit/{question.qid}",
        candidate_id=question.qid,
        lang=lang,  # type: ignore[arg-type]
        cell=cell,
        question=question.text,
        answer=question.answer,
        answer_aliases=question.answers[1:],
        support_chunk_ids=list(dict.fromkeys(question.support)),
        answer_chunk_id=answer_chunks[0] if len(answer_chunks) == 1 else None,
        bridge_entities=list(question.bridge_entities),
    )


class AuditSchema:
    """What a benchmark file can get wrong: empty question, judged ids not in the corpus, a long answer."""

    name = "schema"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        if not draft.question.strip():
            return verdict(self.name, False, "empty_question", "The question text is empty.")
        support = list(draft.support_chunk_ids)
        existing = ctx.existing(support)
        unknown = [c for c in support if c not in existing]
        if unknown:
            return verdict(self.name, False, "unknown_chunk",
                           f"Judged passages missing from corpus.jsonl: {', '.join(unknown[:10])}.", unknown=unknown)
        figures = {"support": len(support), "answer_tokens": len(tokenize(draft.answer, draft.lang))}
        if draft.answer and figures["answer_tokens"] > ctx.settings.answer_max_tokens:
            return verdict(self.name, False, "answer_too_long",
                           f"The reference answer has {figures['answer_tokens']} words (at most "
                           f"{ctx.settings.answer_max_tokens}): it cannot be checked by matching.", **figures)
        return verdict(self.name, True, **figures)


class AuditShortcut:
    """The shortcut validator, with every answer-holding passage counting as the answer chunk."""

    name = "shortcut"

    def __init__(self, answer_chunks: Callable[[Draft], list[str]]) -> None:
        self.inner = ShortcutValidator()
        self.answer_chunks = answer_chunks

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        answer_chunks = self.answer_chunks(draft)
        result = self.inner.check(draft, ctx)
        result.figures["answer_chunks"] = answer_chunks
        if not result.ok or result.skipped or len(answer_chunks) < 2:
            return result
        k = ctx.settings.shortcut_k
        hits = {
            name: sorted(rank for chunk, rank in (row.get("ranks") or {}).items() if chunk in answer_chunks)
            for name, row in (result.figures.get("searchers") or {}).items()
        }
        found = {name: ranks[0] for name, ranks in hits.items() if ranks}
        if not found:
            return result
        which = "; ".join(f"{name} ranks an answer passage at {rank}" for name, rank in found.items())
        flagged = verdict(
            self.name, False, "answer_chunk_in_top_k",
            f"Searching the question as it stands already finds a passage holding the answer ({which}, top {k}).",
            **result.figures,
        )
        return flagged


def not_applicable(name: str, draft: Draft, *, llm: bool, agent: bool, selected: bool) -> Verdict | None:
    """A skipped verdict saying why ``name`` cannot run on this question, or None when it can."""
    if not selected:
        return skipped(name, "not_selected", f"{name} was not among the validators asked for (--validators)")
    has_answer = bool(draft.answer.strip())
    if name == "answerable" and not draft.steps:
        return skipped(name, "no_steps", "the benchmark gives no reasoning steps (passage, quote) to check")
    if name == "leakage" and not has_answer and not draft.bridge_entities:
        return skipped(name, "no_answer", "the benchmark gives neither an answer nor bridge entities for this question")
    if name == "agent_run" and not agent:
        return skipped(name, "not_requested", "the search agent run was not asked for (--agent)")
    if name in LLM_VALIDATORS and not llm:
        return skipped(name, "no_llm", f"{name} needs an LLM (--llm SPEC)")
    if name in ANSWER_VALIDATORS and not has_answer:
        return skipped(name, "no_answer", f"{name} compares with a reference answer; the benchmark gives none")
    return None
