"""Leakage: the question must not name the answer (or an alias) or any bridge entity.

"Name" is taken broadly: any case or punctuation, any inflected Russian form (lemma
or stem), a transliteration or small misspelling (Latin skeleton similarity), and
parts of multi-word names: two consecutive words of the name, or one distinctive word
of it alone (a surname, 'Ashkel' of 'River Ashkel'). A word is distinctive when the
corpus never uses it as an ordinary lower-case word. Words of entities the question is
allowed to name (the subgraph's constraint entities) do not count as partial leaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.tokens import Lexicon, Token, content, proper_starts, token_match, tokenize


@dataclass(frozen=True)
class Leak:
    role: str   # answer | bridge
    name: str   # the name that leaked
    words: str  # the question's words that leak it
    kind: str   # full | near | partial


def find_leak(
    question: list[Token],
    name: str,
    lang: str,
    lexicon: Lexicon,
    *,
    threshold: float,
    allowed: Sequence[Token] = (),
    role: str = "bridge",
    proper: set[int] = frozenset(),  # type: ignore[assignment]
) -> Leak | None:
    """The first way ``question`` (content tokens) names ``name``, or None.

    ``proper``: start offsets of question tokens written as names (capitalised inside a
    sentence); a near match (typo, transliteration) on an ordinary word counts only there.
    """
    name_tokens = content(tokenize(name, lang))
    if not name_tokens:
        return None
    distinctive = [not lexicon.is_common(t) and (t.number is not None or len(t.fold) >= 3) for t in name_tokens]

    def match(i: int, q: Token, anchored: bool = False) -> str | None:
        how = token_match(name_tokens[i], q, threshold)
        if how == "near" and not (distinctive[i] or anchored or q.start in proper):
            return None  # 'iron' vs 'irony': near matches only where a name is meant
        return how

    n = len(name_tokens)
    # the whole name, in order; inside a longer name a typo in an ordinary word still counts
    # ('Port Salow') as long as one word matches outright
    for start in range(len(question) - n + 1):
        hows = [match(j, question[start + j], anchored=n > 1) for j in range(n)]
        if all(hows) and (n == 1 or any(h != "near" for h in hows) or all(distinctive)):
            kind = "near" if "near" in hows else "full"
            return Leak(role, name, _span(question[start : start + n]), kind)
    if n == 1:
        return None
    # two consecutive words of a longer name
    for j in range(n - 1):
        for start in range(len(question) - 1):
            if match(j, question[start]) and match(j + 1, question[start + 1]):
                return Leak(role, name, _span(question[start : start + 2]), "partial")
    # one distinctive word alone (a surname), unless it belongs to a name the question may use
    for j, token in enumerate(name_tokens):
        if not distinctive[j] or any(token_match(token, a, threshold) for a in allowed):
            continue
        for q in question:
            if match(j, q):
                return Leak(role, name, q.surface, "partial")
    return None


def _span(tokens: list[Token]) -> str:
    return " ".join(t.surface for t in tokens)


class LeakageValidator:
    name = "leakage"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        lang = draft.lang
        question = content(tokenize(draft.question, lang))
        proper = proper_starts(draft.question, question)
        lexicon = ctx.get_lexicon()
        threshold = ctx.settings.leak_similarity
        allowed_names = ctx.resolve_names(ctx.subgraph.constraint_entities) if ctx.subgraph else []
        allowed = [t for name in allowed_names for t in content(tokenize(name, lang))]
        targets: list[tuple[str, str]] = [("answer", a) for a in [draft.answer, *draft.answer_aliases] if a.strip()]
        bridges = list(draft.bridge_entities) + (list(ctx.subgraph.bridge_entities) if ctx.subgraph else [])
        targets += [("bridge", b) for b in ctx.resolve_names(bridges)]
        leaks: list[Leak] = []
        seen: set[tuple[str, str]] = set()
        for role, name in targets:
            leak = find_leak(question, name, lang, lexicon, threshold=threshold, allowed=allowed, role=role,
                             proper=proper)
            if leak and (leak.role, leak.words.casefold()) not in seen:
                seen.add((leak.role, leak.words.casefold()))
                leaks.append(leak)
        figures = {"names_checked": len(targets), "leaks": [leak.__dict__ for leak in leaks]}
        if not leaks:
            return verdict(self.name, True, **figures)
        reason = "answer_leaked" if any(l.role == "answer" for l in leaks) else "bridge_leaked"
        items = "; ".join(
            say(lang, "leak_item", words=leak.words, phrase=say(lang, f"leak_{leak.kind}_{leak.role}"), name=leak.name)
            for leak in leaks
        )
        feedback = say(lang, "leaked", items=items)
        return verdict(self.name, False, reason, feedback, **figures)
