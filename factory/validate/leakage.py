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

from factory.contract import Contract, audit_contract, subgraph_contract
from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.tokens import Lexicon, Token, content, proper_starts, token_match, tokenize


# number words that stop-word lists drop: an answer written "five years" or "восемь лет" keeps
# only its unit as content, and a unit names nothing
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion ноль один два три четыре пять шесть семь восемь девять десять одиннадцать двенадцать тринадцать "
    "четырнадцать пятнадцать шестнадцать семнадцать восемнадцать девятнадцать двадцать тридцать сорок пятьдесят "
    "шестьдесят семьдесят восемьдесят девяносто сто тысяча миллион миллиард".split())


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
    masked: set[int] = frozenset(),  # type: ignore[assignment]
    person: bool = False,
) -> Leak | None:
    """The first way ``question`` (content tokens) names ``name``, or None.

    ``proper``: start offsets of question tokens written as names (capitalised inside a
    sentence). A near match (typo, transliteration) counts only on such a word or on a
    rare one: 'parish' is no misspelt 'Paris', 'whales' no 'Wales'. ``masked``: offsets
    of tokens inside a name the question may use ('New York' of 'New York Times'), which
    never leak anything. ``person``: a first name alone names nobody; a surname does, an
    ordinary word too ('Plant' of 'Robert Plant') where the question capitalises it.
    """
    every = tokenize(name, lang)
    name_tokens = content(every)
    if not name_tokens:
        return None
    if not any(t.number is not None for t in name_tokens) and any(
            t.fold in _NUMBER_WORDS or t.lemma in _NUMBER_WORDS for t in every):
        return None  # 'five years': the value is spelled out, its unit alone names nothing
    distinctive = [not lexicon.is_common(t) and (t.number is not None or len(t.fold) >= 3) for t in name_tokens]
    if person and len(name_tokens) > 1:
        distinctive[0] = False  # 'John' of 'John Smith'
    values = [t.number is not None and (len(t.number) > 1 or len(name_tokens) == 1) for t in name_tokens]
    valued = any(values)
    if valued:  # '146,215 square kilometres', '146,215 km2': the number is the answer, its unit names nothing
        distinctive = values

    def match(i: int, q: Token, anchored: bool = False) -> str | None:
        if q.start in masked:
            return None
        how = token_match(name_tokens[i], q, threshold)
        if how == "near" and q.start not in proper and lexicon.is_common(q):
            return None  # a near match only where a name is meant or the word is rare
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
    # two consecutive words of a longer name (of a value with a unit, only with the number)
    for j in range(n - 1):
        if valued and not (values[j] or values[j + 1]):
            continue
        for start in range(len(question) - 1):
            if match(j, question[start]) and match(j + 1, question[start + 1]):
                return Leak(role, name, _span(question[start : start + 2]), "partial")
    # one distinctive word alone (a surname), unless it belongs to a name the question may use;
    # a person's surname that is also an ordinary word ('Plant', 'Bush') leaks where the question
    # capitalises it, a sentence's first word too ('... the singer. Plant?'): rephrasing such a
    # question costs a revision, missing the answer's surname costs the task
    for j, token in enumerate(name_tokens):
        surname = person and j == n - 1
        if not (distinctive[j] or surname) or any(token_match(token, a, threshold) for a in allowed):
            continue
        for q in question:
            if match(j, q) and (distinctive[j] or q.capitalised):
                return Leak(role, name, q.surface, "partial")
    return None


def allowed_spans(question: list[Token], names: Sequence[str], lang: str, threshold: float) -> set[int]:
    """Offsets of question tokens that spell out a whole name the question may use."""
    out: set[int] = set()
    for name in names:
        tokens = content(tokenize(name, lang))
        n = len(tokens)
        for start in range(len(question) - n + 1) if n else ():
            if all(token_match(tokens[j], question[start + j], threshold) in {"exact", "lemma"} for j in range(n)):
                out.update(q.start for q in question[start:start + n])
    return out


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
        contract = draft_contract(draft, ctx)
        allowed = [t for name in contract.may_name for t in content(tokenize(name, lang))]
        masked = allowed_spans(question, contract.may_name, lang, threshold)
        people = _person_names(draft, ctx)
        answers = set(contract.answer_names)
        targets = [("answer" if name in answers else "bridge", name) for name in contract.must_hide]
        leaks: list[Leak] = []
        seen: set[tuple[str, str]] = set()
        for role, name in targets:
            leak = find_leak(question, name, lang, lexicon, threshold=threshold, allowed=allowed, role=role,
                             proper=proper, masked=masked, person=name in people)
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


def _person_names(draft: Draft, ctx: ValidationContext) -> set[str]:
    """The hidden names that belong to people (the answer of a person cell, person entities)."""
    out = {a for a in [draft.answer, *draft.answer_aliases]} if draft.cell.answer_type == "person" else set()
    entities = (ctx.subgraph.figures.get("entities") or {}) if ctx.subgraph else {}
    for info in entities.values():
        if isinstance(info, dict) and info.get("label") == "person":
            out.update([info.get("name") or "", *(info.get("aliases") or [])])
    return {n for n in out if n}


def names_in(question: str, name: str, lang: str, ctx: ValidationContext) -> bool:
    """Does the question name ``name`` (in any form the leakage check recognises)?"""
    tokens = content(tokenize(question, lang))
    return find_leak(tokens, name, lang, ctx.get_lexicon(), threshold=ctx.settings.leak_similarity,
                     proper=proper_starts(question, tokens)) is not None


def draft_contract(draft: Draft, ctx: ValidationContext) -> Contract:
    """The contract the draft is judged by: its subgraph's, or, for a task without roles
    (an audit), the one its question implies: a passage whose title it names is a seed."""
    if ctx.subgraph is not None:
        return subgraph_contract(draft, ctx.subgraph, ctx.resolve_names)
    titles = ctx.chunks.titles(list(draft.support_chunk_ids))
    return audit_contract(draft, lambda c: bool(titles.get(c)) and names_in(draft.question, titles[c], draft.lang, ctx))
