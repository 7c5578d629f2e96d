"""Lemmas of Russian person names: the words of one PER span, read together.

Word by word, pymorphy3 reads «Сомова» as the adjective «сомовый», «Мандела» as a form
of «мандело» and the initial «Т.» as «так». Inside a person span the words are read as
one name instead:

* initials (one letter, or a vowelless abbreviation such as «Дж») stay as the letter;
* a *frame* (case, number, gender) is chosen where the name readings (pymorphy3's
  Name/Surn/Patr tags) of the words agree best, led by the first name: «Александра
  Кокорина» is the genitive of a man's name, «Анны Ивановой» of a woman's;
* each word takes its reading in that frame: a first name its normal form, a surname
  or patronymic its nominative in the frame's gender («Ивановой» -> «иванова»);
* a word with no name reading is a surname by its shape: Russian -ов/-ев/-ин/-ский
  surnames are rebuilt in the frame's gender («Сомова» -> «сомов»); a foreign surname
  drops a case ending the frame explains («Ассанжа» -> «ассанж», «Манделы» ->
  «мандела»), and is otherwise kept as written (indeclinable: «Мадуро», «Фриске»).

Returns lower-case lemmas; hyphenated parts are lemmatised one by one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from factory.nlp.morph import morph

_NAME_TAGS = ("Name", "Surn", "Patr")
_VOWELS = set("аеёиоуыэюяaeiouy")
_CASES = ("nomn", "gent", "datv", "accs", "ablt", "loct")
# Russian surname shapes: -ов/-ев/-ин/-ын + a case ending, and adjectival -ский/-цкий
_RU_SURNAME = re.compile(r"^(.{2,}?(?:ов|ев|ёв|ин|ын))(а|у|ым|ом|е|ой|ою|ы)?$")
_RU_SURNAME_ADJ = re.compile(r"^(.{2,}?[сц]к)(ий|ого|ому|им|ом|ая|ой|ую|ою)$")
_FEMININE_ENDINGS = ("ой", "ою")
# case endings of a declined foreign surname, per case, for consonant stems and for -а/-я stems
# (a final -и stays: «Берлускони» and «Месси» do not decline)
_CONSONANT_ENDINGS = {"gent": ("а", "я"), "accs": ("а", "я"), "datv": ("у", "ю"), "ablt": ("ом", "ем"), "loct": ("е",)}
_A_STEM_ENDINGS = {"gent": ("ы",), "datv": ("е",), "accs": ("у", "ю"), "ablt": ("ой", "ей", "ою"), "loct": ("е",)}


@lru_cache(maxsize=200_000)
def _name_parses(word: str) -> tuple:
    """Singular name readings. For a word the dictionary lacks, the guesser's reading of a
    final -и as a case of an -я name is dropped («Спейси» is not «Спейся»)."""
    parses = [p for p in morph().parse(word) if any(t in p.tag for t in _NAME_TAGS) and p.tag.number != "plur"]
    if word.endswith("и") and not morph().word_is_known(word):
        parses = [p for p in parses if p.normal_form == word]
    return tuple(parses)


def known_word(word: str) -> bool:
    """The dictionary has the word (its lemma is no guess)."""
    return morph().word_is_known(word.lower())


def is_initial(word: str) -> bool:
    """One letter, or a short vowelless abbreviation of a first name («Дж», «Ст»)."""
    return len(word) == 1 or (len(word) <= 3 and word[:1].isupper() and not (set(word.lower()) & _VOWELS))


def _agrees(parse, frame: tuple[str, str, str | None]) -> bool:
    case, number, gender = frame
    tag = parse.tag
    if tag.case != case or tag.number != number:
        return False
    return gender is None or tag.gender is None or tag.gender == gender or "ms-f" in tag


def _first_name_readings(word: str, first_of_several: bool) -> tuple:
    """The name readings of a word; the first of several words, when it can be a first
    name, is read only as one («Аделина Сотникова» is not the genitive of «Аделин»)."""
    parses = _name_parses(word)
    if first_of_several:
        names = tuple(p for p in parses if "Name" in p.tag)
        return names or parses
    return parses


def _frame(words: list[str]) -> tuple[str, str, str | None] | None:
    """The (case, number, gender) in which the name readings of the words agree best.

    Each candidate frame comes from a reading of one word; it scores one point per word
    with a reading in it plus that reading's probability, the first name counting
    twice (it carries the gender).
    """
    # indeclinable readings («Месси», every case of either gender) carry no case or gender
    readings = [(i, _first_name_readings(w.lower(), len(words) > 1 and i == 0)) for i, w in enumerate(words)]
    readings = [(i, tuple(p for p in parses if "Fixd" not in p.tag)) for i, parses in readings]
    # plain strings: pymorphy's grammemes refuse comparison with anything but a grammeme
    candidates = {(str(p.tag.case), str(p.tag.number), str(p.tag.gender) if p.tag.gender in ("masc", "femn") else None)
                  for _, parses in readings for p in parses if p.tag.case in _CASES}
    best, best_score = None, None
    for frame in candidates:
        score = 0.0
        for i, parses in readings:
            agreeing = [p.score for p in parses if _agrees(p, frame)]
            if agreeing:
                weight = 2.0 if any("Name" in p.tag for p in parses) and i == 0 else 1.0
                score += weight * (1.0 + max(agreeing))
        # ties: singular, masculine, then the commoner case (a man's genitive is also his
        # accusative); the order is total, so every process picks the same frame
        key = (score, frame[1] == "sing", frame[2] == "masc", -_CASES.index(frame[0]), frame[2] or "")
        if best_score is None or key > best_score:
            best, best_score = frame, key
    return best


def _surname_by_shape(word: str, frame) -> str | None:
    """A Russian surname rebuilt in the frame's gender, or None when the shape is not one."""
    feminine = frame is not None and frame[2] == "femn"
    match = _RU_SURNAME_ADJ.match(word)
    if match:
        feminine = feminine or (frame is None and match.group(2) in ("ая", "ую"))
        return match.group(1) + ("ая" if feminine else "ий")
    match = _RU_SURNAME.match(word)
    if match:
        ending = match.group(2) or ""
        feminine = feminine or (frame is None and ending in _FEMININE_ENDINGS)
        return match.group(1) + ("а" if feminine else "")
    return None


def _foreign(word: str, frame) -> str:
    """A surname the dictionary does not know: drop the case ending the frame explains."""
    if frame is None:
        return _alone(word)
    case, _, gender = frame
    if case == "nomn":
        return word
    if gender != "femn":
        for ending in _CONSONANT_ENDINGS.get(case, ()):
            stem = word[: -len(ending)]
            if word.endswith(ending) and len(stem) >= 3 and stem[-1] not in _VOWELS:
                return stem + _soft(ending, stem)
    # a man's first name in the genitive is also his accusative: «Василия Небензю»
    cases = (case, "accs") if case == "gent" and gender != "femn" else (case,)
    for ending in (e for c in cases for e in _A_STEM_ENDINGS.get(c, ())):
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3 and stem[-1] not in _VOWELS:
            return stem + _a_stem(ending, stem)
    return word


def _soft(ending: str, stem: str) -> str:
    # «Скрипаля» is «Скрипаль»: я, ю, ем follow a soft consonant
    return "ь" if ending in ("я", "ю", "ем") and stem[-1] not in "жшчщц" else ""


def _a_stem(ending: str, stem: str) -> str:
    soft = ending in ("ей", "ю") or stem[-1] in "жшчщ"
    return "я" if soft and stem[-1] not in "жшчщкгх" else "а"


def _alone(word: str) -> str:
    """A foreign surname with no first name to agree with: only endings no nominative
    has are dropped («Манделы», «Рокфеллером», «Шакирой», «Гарсию»)."""
    for ending in ("ией", "ии", "ию"):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            return word[: -len(ending)] + "ия"
    for ending in ("ом", "ем"):
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3 and stem[-1] not in _VOWELS:
            return stem + _soft(ending, stem)
    for ending in ("ой", "ою", "ы"):
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3 and stem[-1] not in _VOWELS:
            return stem + _a_stem(ending, stem)
    return word


def _adjectival_surname(word: str, frame) -> str | None:
    """A surname that is a dictionary adjective stressed on the ending («Яровой»): its
    nominative in the frame's gender («Ирины Яровой» -> «яровая»), not the guessed «Ярова»."""
    case, number, gender = frame
    if number != "sing" or not known_word(word):
        return None
    for parse in morph().parse(word):
        tag = parse.tag
        # only adjectives stressed on the ending (яровой, not лавровый: «Лаврова» is a noun surname)
        if (tag.POS == "ADJF" and parse.normal_form.endswith("ой") and tag.case == case and tag.number == "sing"
                and (gender is None or tag.gender == gender)):
            inflected = parse.inflect({"nomn", "sing", tag.gender or "masc"})
            if inflected is not None:
                return inflected.word
    return None


def _word_lemma(word: str, frame, first_name: bool) -> str:
    lower = word.lower()
    if not first_name and frame is not None:
        adjectival = _adjectival_surname(lower, frame)
        if adjectival:
            return adjectival
    parses = _first_name_readings(lower, first_name)
    agreeing = [p for p in parses if frame is not None and _agrees(p, frame)] or (list(parses) if frame is None else [])
    if agreeing:
        # a declinable reading first: «Анне» is a form of «Анна» before it is the fixed «Анне»
        parse = max(agreeing, key=lambda p: ("Fixd" not in p.tag, p.score))
        if "Name" in parse.tag:
            return parse.normal_form
        inflected = parse.inflect({"nomn"})
        return inflected.word if inflected is not None else parse.normal_form
    by_shape = None if first_name else _surname_by_shape(lower, frame)
    if by_shape:
        return by_shape
    if not parses and morph().word_is_known(lower):
        # a dictionary word inside the span («младшего», «Кандидатке»): its own lemma when
        # it has a reading in the frame's case (or there is no frame)
        words = [p for p in morph().parse(lower) if p.tag.POS in ("NOUN", "ADJF") and p.tag.number != "plur"]
        same = [p for p in words if frame is not None and p.tag.case == frame[0]] if frame else words
        if same:
            return max(same, key=lambda p: p.score).normal_form
    return _foreign(lower, frame)


def _cyrillic(word: str) -> bool:
    return any("\u0400" <= ch <= "\u04ff" for ch in word)


def person_lemmas(words: list[str]) -> list[str]:
    """Lemmas of the words of one person name (see the module docstring); words in
    another script are only lower-cased."""
    parts = [w for w in words if w]
    named = [w for w in parts if _cyrillic(w) and not is_initial(w)]
    frame = _frame([p for w in named for p in re.split(r"[-‐‑]", w) if p]) if named else None
    out: list[str] = []
    seen = 0
    for word in parts:
        if not _cyrillic(word) or is_initial(word):
            out.extend(p.lower() for p in re.split(r"[-‐‑]", word) if p)
            continue
        # the first of several names is a first name, never a surname by its shape
        first_name = len(named) > 1 and seen == 0
        seen += 1
        out.extend(_word_lemma(piece, frame, first_name) for piece in re.split(r"[-‐‑]", word) if piece)
    return [w.replace("ё", "е") for w in out]
