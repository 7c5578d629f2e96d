"""Answerable: the draft's own steps lead from what the question names to the answer,
through every support passage, on words that are really there. No model is asked.

Each step cites a support passage and quotes a span of it; the span must occur in the
passage (case, spacing, quote marks and dashes aside). Every support passage must be
cited; where the contract has seed passages (factory/contract.py), the path starts at
one; and the answer must be reached: written in a quote, or in the answer passage (its
text or title) that a step cites, or, for a computed number, obtained from two quoted
numbers (in digits or in words) by a difference, sum, product or ratio, or for a duration ("7 months", "117 дней")
counted between two quoted calendar dates (for a calculation, one number or date from each
of two steps, and where the steps' findings state a result, "1997 - 1995 = 2" or "Answer:
2", the answer is one of them). It runs for every composer: a draft a model cannot back with its passages
fails here, cheaply, before any search or model call.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import unicodedata
from typing import Iterator

from factory.contract import seed_chunks
from factory.nlp.quantities import calendar_dates, number_word, scale_power
from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.tokens import content, tokenize

_QUOTES = str.maketrans({"«": '"', "»": '"', "“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "—": "-", "–": "-",
                         "‑": "-", "ё": "е", "Ё": "Е"})
_EDGES = " \t\n.,;:!?…\"'()[]"
MIN_QUOTE_WORDS = 2


def normal(text: str) -> str:
    """A span as compared: NFC, one kind of quote and dash, ё as е, spaces folded, case folded."""
    text = unicodedata.normalize("NFC", text).translate(_QUOTES)
    return " ".join(text.split()).casefold()


def quoted_in(quote: str, passage: str) -> bool:
    core = normal(quote).strip(_EDGES)
    return bool(core) and core in normal(passage)


def _holds(span: str, answer: str, lang: str) -> bool:
    """Every content word of ``answer`` occurs in ``span`` (by lemma, stem or number value)."""
    wanted = content(tokenize(answer, lang)) or tokenize(answer, lang)
    keys = {k for t in tokenize(span, lang) for k in (t.fold, t.lemma, t.stem)}
    return bool(wanted) and all(t.fold in keys or t.lemma in keys or t.stem in keys for t in wanted)


def _numbers(text: str, lang: str) -> list[float]:
    """The numbers of ``text``: in digits, times a scale word after them ("6 million", «2,04
    млрд»), or a cardinal in words («четырёх», "twelve")."""
    return [value for value, _ in _numbers_with_precision(text, lang)]


def _numbers_with_precision(text: str, lang: str) -> list[tuple[float, float]]:
    """(value, the rounding its scale word implies) for each number of ``text``: "1.1 million" is
    (1,100,000, 50,000), half a unit of its last digit; a number without one is exact, "918" (918, 0)."""
    tokens = tokenize(text, lang)
    out = []
    for i, token in enumerate(tokens):
        if token.number is not None:
            try:
                value = float(token.number)
            except ValueError:
                continue
            decimals = len(token.number.partition(".")[2])
            power = scale_power(tokens[i + 1].fold, lang) if i + 1 < len(tokens) else None
            out.append((value * 10 ** power, 0.5 * 10 ** (power - decimals)) if power else (value, 0.0))
        elif (word := number_word(token.lemma, lang)) is not None:
            out.append((word, 0.0))
    return out


def computed(answer: str, quotes: list[str], lang: str, *, across: bool = True) -> bool:
    """The answer's number is a difference, sum, product or ratio of two quoted numbers, or a
    duration counted between two quoted dates: one in each of two steps (``across``: a
    calculation's operands come from two passages, else one of them is decorative), or anywhere
    in the quotes (a chain's "1571–1576" gives a reign's length)."""
    target = _numbers_with_precision(answer, lang)
    if len(target) != 1:
        return False
    goal, half_unit = target[0]
    tolerance = _tolerance(goal, half_unit)
    for a, b in _pairs([_numbers(q, lang) for q in quotes], across):
        results = [abs(a - b), a + b, a * b] + ([a / b] if b else []) + ([b / a] if a else [])
        if any(abs(r - goal) <= tolerance for r in results):
            return True
    unit = next((u for u, pattern in _DURATION_UNITS.items() if pattern.search(answer.casefold())), None)
    return unit is not None and any(goal in _durations(first, second, unit)
                                    for first, second in _pairs([calendar_dates(q) for q in quotes], across))


# what a step's finding says it computed: the right side of "A - B = C" or its "Answer: C"
_STATED = re.compile(r"(?:=|≈|\b(?:answer|ответ)\s*:)\s*(?:about|approximately|around|roughly|около|примерно|"
                     r"приблизительно)?\s*(\d[\d\s.,\u00a0\u202f]*\d|\d)(?!\s*[-−–+×*/÷]\s*\d)(\s*[^\W\d_]+)?",
                     re.IGNORECASE)


def _tolerance(goal: float, *halves: float) -> float:
    """How far a result may be from ``goal`` and match: 0.5%, or the rounding a number written
    with a scale word implies (``halves``: "1.1 million" for 1,097,329); a plain "918" is 918
    within 0.5%."""
    return max(0.5e-2 * abs(goal), 0.01, *halves)


def stated_results(findings: str) -> list[str]:
    """The results a draft's findings state (with a scale word after them, "1.1 million"), where
    they state any: a calculation's answer must be one of them, or the steps computed something else."""
    return [f"{m.group(1)}{m.group(2) or ''}".strip() for m in _STATED.finditer(findings)]


def same_number(answer: str, stated: str, lang: str) -> bool:
    """The answer's number is the stated one, or either rounds to the other ("1.1 million" and
    1,097,329; "698" and 697.8)."""
    mine, theirs = _numbers_with_precision(answer, lang), _numbers_with_precision(stated, lang)
    if len(mine) != 1 or not theirs:
        return not mine  # an answer without one number is not compared
    (goal, half), (value, other_half) = mine[0], theirs[0]
    return abs(goal - value) <= _tolerance(goal, half, other_half, 0.5)


def _pairs(per_step: list[list], across: bool) -> Iterator[tuple]:
    """Two values to combine: from two different steps (``across``), or any two of the quotes'."""
    if across:
        return (pair for a, b in itertools.combinations(per_step, 2) for pair in itertools.product(a, b))
    return itertools.combinations([v for values in per_step for v in values], 2)


# the unit of a computed duration ("7 месяцев", "117 days"): it is counted between two quoted dates
_DURATION_UNITS = {
    "days": re.compile(r"(?<!\w)(?:days?|день|дн[яейи]\w*|сут\w*)(?!\w)"),
    "weeks": re.compile(r"(?<!\w)(?:weeks?|недел\w*)(?!\w)"),
    "months": re.compile(r"(?<!\w)(?:months?|месяц\w*)(?!\w)"),
    "years": re.compile(r"(?<!\w)(?:years?|лет|год\w*)(?!\w)"),
}


def _durations(a: tuple[int, int, int | None], b: tuple[int, int, int | None], unit: str) -> set[float]:
    """The whole ``unit``s between two calendar dates, counted as people count them: by calendar
    month or year, and also only the completed ones (17 May to 10 December: 7 or 6 months)."""
    (y1, m1, d1), (y2, m2, d2) = sorted([a, b], key=lambda d: (d[0], d[1], d[2] or 0))
    if unit in ("days", "weeks"):
        if d1 is None or d2 is None:
            return set()
        try:
            days = (dt.date(y2, m2, d2) - dt.date(y1, m1, d1)).days
        except ValueError:  # not a real date (31 June)
            return set()
        return {float(days)} if unit == "days" else {float(days // 7), float(round(days / 7))}
    early = d1 is not None and d2 is not None and d2 < d1  # the last month is not complete
    if unit == "months":
        months = 12 * (y2 - y1) + (m2 - m1)
        return {float(months), float(months - early)}
    years = y2 - y1
    return {float(years), float(years - ((m2, d2 or 0) < (m1, d1 or 0)))}


class AnswerableValidator:
    name = "answerable"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        lang = draft.lang

        def fail(reason: str, **values: object) -> Verdict:
            return verdict(self.name, False, reason, say(lang, f"answerable_{reason}", **values), **values)

        support = list(dict.fromkeys(draft.support_chunk_ids))
        steps = list(draft.steps)
        if not steps:
            return fail("no_steps")
        texts = ctx.chunks.texts(support)
        for n, step in enumerate(steps, 1):
            if step.chunk_id not in support:
                return fail("outside_support", step=n, chunk=step.chunk_id)
            words = [t for t in content(tokenize(step.quote, lang))]
            if len(words) < MIN_QUOTE_WORDS and not any(t.number for t in words):
                return fail("quote_too_short", step=n, chunk=step.chunk_id)
            if not quoted_in(step.quote, texts.get(step.chunk_id, "")):
                return fail("quote_not_found", step=n, chunk=step.chunk_id, quote=step.quote[:120])
        cited = {s.chunk_id for s in steps}
        unused = [c for c in support if c not in cited]
        if unused:
            return fail("passage_unused", chunks=", ".join(unused))
        seeds = seed_chunks(ctx.subgraph) & set(support) if ctx.subgraph is not None else set()
        if seeds and steps[0].chunk_id not in seeds:
            return fail("not_from_seed", chunk=steps[0].chunk_id, seeds=", ".join(c for c in support if c in seeds))
        answers = [a for a in [draft.answer, *draft.answer_aliases] if a.strip()]
        at_answer = [s.quote for s in steps if s.chunk_id == draft.answer_chunk_id] or [s.quote for s in steps]
        reached = any(_holds(q, a, lang) for q in at_answer for a in answers)
        how = "quoted"
        if not reached and draft.answer_chunk_id in cited:
            # the quote holds the property, the passage names its subject ('..., making it the
            # sixth-most populated city' in the article on Cebu City)
            title = ctx.chunks.titles([draft.answer_chunk_id]).get(draft.answer_chunk_id, "")
            passage = f"{title}\n{texts.get(draft.answer_chunk_id, '')}"
            reached, how = any(_holds(passage, a, lang) for a in answers), "in_answer_passage"
        across = draft.cell.mechanic == "calculation"
        if not reached and computed(draft.answer, [s.quote for s in steps], lang, across=across):
            reached, how = True, "computed"
        if not reached:
            return fail("answer_not_reached", answer=draft.answer, chunk=draft.answer_chunk_id or "?")
        stated = stated_results(" ".join(s.finding for s in steps)) if across else []
        if stated and not any(same_number(draft.answer, r, lang) for r in stated):
            return fail("answer_not_stated", answer=draft.answer, stated=", ".join(dict.fromkeys(stated)))
        return verdict(self.name, True, steps=len(steps), answer=how)
