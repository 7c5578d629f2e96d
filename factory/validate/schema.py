"""Schema: the draft parsed, cites chunks that exist, asks a real question built from
its evidence, and has a short answer that is not a sentence.

A question with too few content words ("Combine the clues.") or none of the support's
words cannot be searched for, yet it slips past every retrieval check (there is nothing
to retrieve with) and a weak solver can still copy a phrase out of the support: it is
refused here. So is a draft that copies the prompt's example values into its fields.
"""

from __future__ import annotations

import re

from factory.llm.types import TRUNCATED
from factory.prompts import COMPOSER
from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.tokens import content, tokenize

# a finite verb-like token in an answer marks a sentence ('He founded the works in 1834')
_SENTENCE_WORDS = {
    "en": {"is", "was", "were", "are", "has", "had", "have", "did", "does", "because"},
    "ru": {"является", "являлся", "был", "была", "было", "были", "потому"},
}


class SchemaValidator:
    name = "schema"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s, lang = ctx.settings, draft.lang

        def fail(reason: str, **figures: object) -> Verdict:
            values = figures.pop("say", {})
            return verdict(self.name, False, reason, say(lang, reason, **values), **figures)

        if draft.parse_error and draft.parse_error.startswith(TRUNCATED):
            # cut off by the token budget (thinking may have eaten it): not a wrong answer
            return fail("truncated", say={"error": draft.parse_error[:200]}, parse_error=draft.parse_error)
        if draft.parse_error:
            return fail("parse_error", say={"error": draft.parse_error[:200]}, parse_error=draft.parse_error)
        if draft.declined:  # the composer found no honest question: only another subgraph can change that
            if _echoed(draft, lang):
                return fail("prompt_echo", say={"fields": "no_honest_question"}, echoed=["no_honest_question"])
            return fail("no_honest_question", say={"reason": draft.declined[:400]})
        if not draft.question.strip():
            return fail("empty_question")
        if not draft.answer.strip():
            return fail("empty_answer")
        support = list(draft.support_chunk_ids)
        if not support:
            return fail("no_support")
        duplicates = sorted({c for c in support if support.count(c) > 1})
        if duplicates:
            return fail("duplicate_support", say={"ids": ", ".join(duplicates)})
        existing = ctx.existing(support + ([draft.answer_chunk_id] if draft.answer_chunk_id else []))
        unknown = [c for c in support if c not in existing]
        if unknown:
            return fail("unknown_chunk", say={"ids": ", ".join(unknown)}, unknown=unknown)
        if not draft.answer_chunk_id:
            return fail("no_answer_chunk")
        if draft.answer_chunk_id not in support:
            return fail("answer_chunk_not_in_support", say={"id": draft.answer_chunk_id})
        tokens = tokenize(draft.answer, lang)
        figures = {"answer_tokens": len(tokens), "support": len(support)}
        if len(tokens) > s.answer_max_tokens:
            return fail("answer_too_long", say={"n": len(tokens), "max": s.answer_max_tokens}, **figures)
        if _is_sentence(draft.answer, tokens, lang, titled=_is_title_type(draft.cell.answer_type)):
            return fail("answer_is_sentence", **figures)
        need = ctx.min_support(draft.cell.mechanic)
        if len(support) < need:
            return fail("not_multi_hop", say={"mechanic": draft.cell.mechanic, "need": need, "n": len(support)},
                        **figures)
        echoed = _echoed(draft, lang)
        if echoed:
            return fail("prompt_echo", say={"fields": ", ".join(echoed)}, echoed=echoed)
        words = content(tokenize(draft.question, lang))
        if len(words) < s.question_min_words:
            return fail("question_too_short", say={"n": len(words), "min": s.question_min_words},
                        question_words=len(words))
        grounded = _grounded_words(words, ctx.chunks.texts(support).values(), lang)
        if len(grounded) < s.question_min_grounded:
            return fail("question_ungrounded", say={"n": len(grounded), "min": s.question_min_grounded},
                        question_words=len(words), grounded_words=len(grounded))
        long_aliases = [a for a in draft.answer_aliases if len(tokenize(a, lang)) > s.answer_max_tokens]
        if long_aliases:
            return fail("alias_too_long", say={"aliases": "; ".join(long_aliases), "max": s.answer_max_tokens})
        return verdict(self.name, True, question_words=len(words), grounded_words=len(grounded), **figures)


def _echoed(draft: Draft, lang: str) -> list[str]:
    """Fields whose value is one of the prompt's example values (copied, not written)."""
    examples = COMPOSER.json_examples(lang) | COMPOSER.json_examples("en")
    fields = {"question": [draft.question], "answer": [draft.answer], "answer_aliases": list(draft.answer_aliases),
              "steps": [v for step in draft.steps for v in (step.quote, step.finding)],
              "no_honest_question": [draft.declined]}
    return [name for name, values in fields.items() if any(v.strip().casefold() in examples for v in values)]


def _grounded_words(words: list, texts, lang: str) -> set[str]:
    """The question's content words (by lemma or stem) that occur in the support passages."""
    keys: set[str] = set()
    for text in texts:
        for token in tokenize(text, lang):
            keys.update((token.lemma, token.stem))
    return {w.fold for w in words if w.lemma in keys or w.stem in keys}


def _is_title_type(answer_type: str) -> bool:
    return "title" in answer_type or "work" in answer_type  # titles may read like sentences


# abbreviations whose dot belongs to a name, in it or at its end: "St. Petersburg", "George
# Walton Lucas Jr." (a reference comparison draft once refused as a sentence), "Warner Bros."
_NAME_ABBREVIATIONS = ("Jr", "Sr", "St", "Inc", "Ltd", "Co", "Corp", "Bros", "Jun", "Sen", "Esq", "Plc")
# a stop that ends a sentence, not an initial's or an abbreviation's dot: "J. R. R. Tolkien",
# "Martin Luther King Jr. Day" and "театр им. Г. Камала" (7 tokens) are names ('им.' for
# 'имени' stands only inside one: at the end it is the pronoun)
_SENTENCE_END = re.compile("".join(rf"(?<!\b{a})" for a in (*_NAME_ABBREVIATIONS, "им")) + r"(?<!\b\w)[.!?;]\s+\S")
# a final dot that closes a name's suffix or a capital initial ("John F."), not a sentence
_NAME_END = re.compile(rf"(?:\b(?:{'|'.join(_NAME_ABBREVIATIONS)})|\b[A-ZА-ЯЁ])\.$")


def _is_sentence(answer: str, tokens: list, lang: str, *, titled: bool) -> bool:
    text = answer.strip()
    if _SENTENCE_END.search(text) and len(tokens) > 4:
        return True
    if titled:
        return False
    if text.endswith((".", "!", "?")) and len(tokens) > 3 and not _NAME_END.search(text):
        return True
    words = {t.fold for t in tokens}
    return len(tokens) > 2 and bool(words & _SENTENCE_WORDS.get(lang, set()))
