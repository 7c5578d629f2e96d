"""What an article's first sentence says its subject is: "Jodhpur is the second-largest
city in ..." -> "city"; "Бурса — город на северо-западе Турции" -> "город".

A comparison asks which of several things of one kind comes first or is largest, so its
candidates must be of one kind. NER labels are too coarse for that (a German state, a
capital and a Balkan country are all locations), and an encyclopedia's opening sentence
states the kind outright. The head is the last word of the copula's complement before a
preposition, relative pronoun or punctuation; words that only announce the real head
("a type of", "a group of") give no category.
"""

from __future__ import annotations

import re

_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ])")
_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d+|[^\w\s]")
_COPULA = {
    "en": re.compile(r"\b(?:is|was|are|were)\s+(?:(?:one|any|each) of\s+)?(?:an?|the)\s+", re.I),
    "ru": re.compile(r"\s[—–]\s+(?:это\s+)?(?:(?:один|одна|одно)\s+из\s+)?", re.I),
}
_PARTICIPLES = frozenset({"known", "born", "built", "held", "made", "run", "grown", "written", "sung", "spoken"})
_AND = frozenset({"and", "or", "и", "или"})  # "the capital and largest city": the head comes later
# Russian puts adjectives before the head noun and genitives after it ("посёлок городского
# типа"): the head is the first word that is not an adjective by its ending
_RU_ADJECTIVE = re.compile(r"(?:ый|ий|ой|ая|яя|ое|ее|ые|ых|их|ого|его|ую|юю)$")
# heads that announce the real category after them ("a type of bird", "одна из форм")
_VAGUE = {
    "en": frozenset("group type kind form branch family set part range unit collection member series number "
                    "body field area term name one way class category variety piece pair".split()),
    "ru": frozenset("группа тип вид форма часть ряд член серия число область термин название "
                    "класс категория разновидность пара".split()),
}


def category(text: str, lang: str) -> str | None:
    """The head noun of the first sentence's "X is a ..." / "X — ..." (lower case), or None."""
    from factory.validate.tokens import stopwords

    copula = _COPULA.get(lang)
    if copula is None:
        return None
    sentence = _FIRST_SENTENCE.split(text, maxsplit=1)[0]
    found = copula.search(sentence)
    if found is None:
        return None
    stops = stopwords(lang)
    head = None
    for word in _WORD.findall(sentence[found.end():])[:12]:
        low = word.casefold()
        if low in _AND:
            continue
        if not word[0].isalpha() or low in stops:
            break  # a number, punctuation or function word ends the head ("the capital of France")
        if word[0].isupper():
            continue  # names and nationalities are not the kind ("an English poet")
        if lang == "ru":
            if not _RU_ADJECTIVE.search(low):
                head = low
                break
        elif head is not None and (low.endswith(("ed", "ing")) or low in _PARTICIPLES):
            break  # "a company based in", "a tournament held every summer"
        else:
            head = low
    if head is None or head in _VAGUE[lang]:
        return None
    return head
