"""Schema: the draft parsed, cites chunks that exist, and has a short answer that is not a sentence."""

from __future__ import annotations

import re

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.text import tokenize

# a finite verb-like token in an answer marks a sentence ('He founded the works in 1834')
_SENTENCE_WORDS = {
    "en": {"is", "was", "were", "are", "has", "had", "have", "did", "does", "because"},
    "ru": {"является", "являлся", "был", "была", "было", "были", "потому"},
}


class SchemaValidator:
    name = "schema"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        if draft.parse_error:
            return verdict(self.name, False, "parse_error",
                           "Your output was not valid JSON for the draft schema: "
                           f"{draft.parse_error[:200]}. Return exactly one JSON object with every field.",
                           parse_error=draft.parse_error)
        if not draft.question.strip():
            return verdict(self.name, False, "empty_question", "The question is empty: write the question.")
        if not draft.answer.strip():
            return verdict(self.name, False, "empty_answer", "The answer is empty: give a short reference answer.")
        support = list(draft.support_chunk_ids)
        if not support:
            return verdict(self.name, False, "no_support", "List the ids of every chunk the answer depends on.")
        duplicates = sorted({c for c in support if support.count(c) > 1})
        if duplicates:
            return verdict(self.name, False, "duplicate_support", f"Support chunk ids repeat: {', '.join(duplicates)}.")
        existing = ctx.existing(support + ([draft.answer_chunk_id] if draft.answer_chunk_id else []))
        unknown = [c for c in support if c not in existing]
        if unknown:
            return verdict(self.name, False, "unknown_chunk",
                           f"These support chunk ids do not exist: {', '.join(unknown)}. "
                           "Cite only the chunk ids given in the fact sheet.", unknown=unknown)
        if not draft.answer_chunk_id:
            return verdict(self.name, False, "no_answer_chunk", "Name the chunk that holds the answer (answer_chunk_id).")
        if draft.answer_chunk_id not in support:
            return verdict(self.name, False, "answer_chunk_not_in_support",
                           f"The answer chunk {draft.answer_chunk_id} is not in the support set; add it or fix the id.")
        tokens = [t for t in tokenize(draft.answer, draft.lang)]
        figures = {"answer_tokens": len(tokens), "support": len(support)}
        if len(tokens) > s.answer_max_tokens:
            return verdict(self.name, False, "answer_too_long",
                           f"The answer has {len(tokens)} words; a reference answer is a name, date, number or "
                           f"title of at most {s.answer_max_tokens} words.", **figures)
        if _is_sentence(draft.answer, tokens, draft.lang, titled=_is_title_type(draft.cell.answer_type)):
            return verdict(self.name, False, "answer_is_sentence",
                           "The answer reads as a sentence; give only the entity, date, number or title.", **figures)
        need = ctx.min_support(draft.cell.mechanic)
        if len(support) < need:
            return verdict(self.name, False, "not_multi_hop",
                           f"A {draft.cell.mechanic} question needs at least {need} support chunks that each "
                           "contribute a step; this one is answerable from "
                           f"{len(support)}. Make the question depend on a fact from another chunk.", **figures)
        return verdict(self.name, True, **figures)


def _is_title_type(answer_type: str) -> bool:
    return "title" in answer_type or "work" in answer_type  # titles may read like sentences


def _is_sentence(answer: str, tokens: list, lang: str, *, titled: bool) -> bool:
    text = answer.strip()
    if re.search(r"[.!?;]\s+\S", text) and len(tokens) > 4:  # "St. Petersburg", "J. R. R. Tolkien" are names
        return True
    if titled:
        return False
    if text.endswith((".", "!", "?")) and len(tokens) > 3:
        return True
    words = {t.fold for t in tokens}
    return len(tokens) > 2 and bool(words & _SENTENCE_WORDS.get(lang, set()))
