"""Does a model's answer reach the reference answer?

Normalisation: case, punctuation, articles, number formats (1,000 = 1000 = 1 000;
'twelve' = 12 for small English and Russian number words), Russian inflection
(lemmas), and the reference's aliases. A match is one of:

* ``exact``: the normalised token sequences are equal (or equal as sets: 'May 12, 1834'
  against '12 May 1834');
* ``contained``: the reference appears inside a longer answer ('It was Edmund Carrow.');
* ``partial``: the answer is a part of the reference that includes its last word
  ('Carrow' for 'Edmund Carrow', 'Ashkel' for 'River Ashkel').

Whatever these rules miss can go to an optional LLM judge (see closed_book/solvability).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from factory.validate.tokens import Token, tokenize

ARTICLES = {"a", "an", "the"}
_NUMBER_WORDS = {
    "en": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"],
    "ru": ["ноль", "один", "два", "три", "четыре", "пять", "шесть", "семь", "восемь", "девять", "десять",
           "одиннадцать", "двенадцать", "тринадцать", "четырнадцать", "пятнадцать", "шестнадцать",
           "семнадцать", "восемнадцать", "девятнадцать", "двадцать"],
}
_WORD_TO_NUMBER = {word: str(i) for words in _NUMBER_WORDS.values() for i, word in enumerate(words)}
_WORD_TO_NUMBER.update({"одна": "1", "одно": "1", "две": "2", "hundred": "100", "thousand": "1000"})


def answer_keys(text: str, lang: str, *, drop_stopwords: bool = False) -> list[str]:
    """The normalised key of each meaningful token of an answer."""
    keys = []
    for token in tokenize(text, lang):
        if token.fold in ARTICLES or (drop_stopwords and token.stop and _key(token) == token.stem):
            continue
        keys.append(_key(token))
    return keys


def _key(token: Token) -> str:
    if token.number is not None:
        return token.number
    number = _WORD_TO_NUMBER.get(token.lemma) or _WORD_TO_NUMBER.get(token.fold)
    if number is not None:
        return number
    return token.lemma if token.cyrillic else token.stem


def normalize_answer(text: str, lang: str = "en") -> str:
    return " ".join(answer_keys(text, lang))


@dataclass(frozen=True)
class Match:
    kind: str  # exact | contained | partial
    reference: str


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def match_answer(candidate: str, references: Iterable[str], lang: str = "en", *, partial: bool = True) -> Match | None:
    """The best way ``candidate`` reaches any of ``references`` (reference answer and aliases)."""
    cand = answer_keys(candidate, lang)
    if not cand:
        return None
    best: Match | None = None
    for reference in references:
        ref = answer_keys(reference, lang)
        if not ref:
            continue
        if cand == ref or (len(ref) > 1 and _content_set(candidate, lang) == _content_set(reference, lang)):
            return Match("exact", reference)
        ref_numbers = [k for k in ref if _is_number(k)]
        if ref_numbers and [k for k in cand if _is_number(k)] == ref_numbers and set(cand) <= set(ref):
            return Match("exact", reference)  # '5200' for '5,200 workers'
        if _contains(cand, ref) and best is None:
            best = Match("contained", reference)
        elif partial and best is None and len(cand) < len(ref) and ref[-1] in cand and set(cand) <= set(ref):
            best = Match("partial", reference)
    return best


def _is_number(key: str) -> bool:
    return key.replace(".", "", 1).isdigit()


def _content_set(text: str, lang: str) -> frozenset[str]:
    return frozenset(answer_keys(text, lang, drop_stopwords=True))


def any_match(candidates: Iterable[str], references: Iterable[str], lang: str = "en") -> Match | None:
    refs = [r for r in references if r]
    for candidate in candidates:
        found = match_answer(candidate, refs, lang)
        if found:
            return found
    return None
