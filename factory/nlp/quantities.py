"""Dates and numbers: rules that find them in Russian text, and canonical keys for both languages.

spaCy's English model already tags DATE/CARDINAL/QUANTITY/MONEY/PERCENT; natasha's
news NER has no such labels, and its yargy date grammar needs pymorphy2 (which no
longer imports on current setuptools), so Russian dates and numbers come from the
regular expressions below. Canonical keys make "12 марта 2001 года", "March 12, 2001"
and "12.03.2001" one date ("2001-03-12"), and "5 млн" and "5 million" one number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

# --------------------------------------------------------------- month names
_RU_MONTHS = ("январ", "феврал", "март", "апрел", "ма", "июн", "июл", "август", "сентябр", "октябр", "ноябр", "декабр")
_RU_MONTH_RE = (
    r"(?:январ[ьяе]|феврал[ьяе]|март[ае]?|апрел[ьяе]|ма[йяе]|июн[ьяе]|июл[ьяе]|август[ае]?"
    r"|сентябр[ьяе]|октябр[ьяе]|ноябр[ьяе]|декабр[ьяе])"
)
_EN_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_EN_MONTH_RE = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
)
_YEAR_WORD = r"(?:год(?:а|у|ом|е|ы|ов|ах|ам)?|гг?\.)"


def _month_number(word: str) -> int | None:
    word = word.lower().rstrip(".")
    if re.fullmatch(_RU_MONTH_RE, word):
        for i, stem in enumerate(_RU_MONTHS):
            if word.startswith(stem) and (stem != "ма" or len(word) == 3):
                return i + 1
    if re.fullmatch(_EN_MONTH_RE, word):
        return _EN_MONTHS.index(word[:3]) + 1
    return None


# ------------------------------------------------------- Russian span rules
_B = r"(?<![\w.,/-])"  # no digit, letter or separator glued in front
_E = r"(?![\w])"
_YEAR_AFTER = "(?:" + "|".join(rf"(?<=\b{p} )" for p in ("в", "с", "со", "до", "после", "по", "от", "к", "около", "между", "и")) + ")"
_RU_MULT_UNIT = (
    r"тыс|млн|млрд|трлн|тысяч|миллион|миллиард|%|процент|руб|доллар|евро|км|километр|метр|тонн|кг|человек|га|гектар"
)
_RU_DATE_PATTERNS = [
    rf"{_B}\d{{4}}-\d{{2}}-\d{{2}}{_E}",
    rf"{_B}\d{{1,2}}\s+{_RU_MONTH_RE}\s+\d{{4}}(?:\s*{_YEAR_WORD})?{_E}",
    rf"(?<!\w){_RU_MONTH_RE}\s+\d{{4}}(?:\s*{_YEAR_WORD})?{_E}",
    rf"{_B}\d{{1,2}}\s+{_RU_MONTH_RE}{_E}",
    rf"{_B}\d{{1,2}}[./]\d{{1,2}}[./]\d{{4}}{_E}",
    rf"{_B}\d{{4}}\s*[-–—]\s*\d{{4}}(?:\s*{_YEAR_WORD}){_E}",
    rf"{_B}\d{{4}}-?[хе]\s+{_YEAR_WORD}{_E}",
    rf"{_B}\d{{4}}-[хе]{_E}",
    rf"{_B}\d{{4}}\s*{_YEAR_WORD}",
    rf"(?<=\()\d{{4}}(?=\))",
    # a bare year after a preposition: "с 1998 по 2001", "до 1917"; not "в 1500 километрах"
    rf"{_YEAR_AFTER}(?:1[0-9]{{3}}|20[0-9]{{2}}){_E}(?!\s*(?:{_RU_MULT_UNIT}))",
    rf"(?<!\w)[IVXL]+\s+(?:век(?:а|е|ом|ов|ах)?|вв?\.)",
    rf"{_B}\d{{1,2}}(?:-(?:м|го|й))?\s+век(?:а|е|ом|ов|ах)?{_E}",
]
# clock times, web addresses and codes are neither dates nor numbers
_RU_SKIP = rf"{_B}\d{{1,2}}:\d{{2}}{_E}|(?:https?://|www\.)\S+"
_RU_MULT = r"(?:тыс\.|тысяч[а-я]*|млн\.?|миллион[а-я]*|млрд\.?|миллиард[а-я]*|трлн\.?|триллион[а-я]*)"
_RU_UNIT = (
    r"(?:%|процент[а-я]*|руб\.|рубл[а-я]*|доллар[а-я]*|евро|\$|€|км|километр[а-я]*|метр[а-я]*|тонн[а-я]*"
    r"|кг|килограмм[а-я]*|человек|гектар[а-я]*|га)"
)
_RU_NUMBER = (
    rf"{_B}[-−]?\d+(?:[\u00a0\u202f ]\d{{3}})*(?:,\d+)?(?:\s*{_RU_MULT})?(?:\s*{_RU_UNIT})?(?![\w-])"
)
_RU_DATE_RE = re.compile("|".join(f"(?:{p})" for p in _RU_DATE_PATTERNS), re.IGNORECASE)
_RU_NUMBER_RE = re.compile(_RU_NUMBER, re.IGNORECASE)
_RU_SKIP_RE = re.compile(_RU_SKIP)


def find_ru_dates_numbers(text: str) -> list[tuple[int, int, str]]:
    """(start, end, "DATE"|"NUMBER") spans in Russian text, non-overlapping, dates first."""
    taken = bytearray(len(text))
    spans: list[tuple[int, int, str]] = []

    def claim(start: int, end: int, label: str | None) -> None:
        if any(taken[start:end]):
            return
        taken[start:end] = b"\x01" * (end - start)
        if label:
            spans.append((start, end, label))

    for match in _RU_SKIP_RE.finditer(text):
        claim(match.start(), match.end(), None)
    for match in _RU_DATE_RE.finditer(text):
        start, end = match.start(), match.end()
        end = start + len(text[start:end].rstrip())
        claim(start, end, "DATE")
    for match in _RU_NUMBER_RE.finditer(text):
        claim(match.start(), match.end(), "NUMBER")
    spans.sort()
    return spans


# -------------------------------------------------------------- date keys
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _roman(text: str) -> int | None:
    total, prev = 0, 0
    for ch in reversed(text.upper()):
        value = _ROMAN.get(ch)
        if value is None:
            return None
        total = total - value if value < prev else total + value
        prev = max(prev, value)
    return total


_EN_ORD_CENTURY = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
    "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twentieth": 20, "twenty-first": 21,
}


def date_key(text: str) -> str | None:
    """A canonical key for a date expression in either language, or None if not understood.

    Forms: ``2001-03-12``, ``2001-03``, ``--03-12`` (day and month), ``2001``,
    ``1998/2001`` (range), ``1990s`` (decade), ``century 19`` (with ``bc`` when BC).
    """
    t = " ".join(text.lower().replace("ё", "е").split())
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)  # "30,000 years ago" is a count, not the year 000
    bc = bool(re.search(r"\b(?:bc|bce|b\.c\.)|до н\.\s?э", t))
    suffix = " bc" if bc else ""
    m = re.search(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)", t)
    if m and 1 <= int(m.group(2)) <= 12:
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    m = re.search(r"(?<!\d)(\d{1,2})[./](\d{1,2})[./](\d{4})(?!\d)", t)
    if m:
        day, month, year = int(m.group(1)), int(m.group(2)), m.group(3)
        if 1 <= month <= 12 and 1 <= day <= 31:
            return f"{year}-{month:02d}-{day:02d}"
    words = re.findall(r"[a-zа-я]+\.?|\d+", t)
    month = next((n for n in (_month_number(w) for w in words) if n), None)
    years = re.findall(r"(?<!\d)(\d{3,4})(?!\d)(?!-?(?:[хе]|s)\b)", t)
    days = [int(d) for d in re.findall(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th)?(?!\d)", t) if 1 <= int(d) <= 31]
    decade = re.search(r"(?<!\d)(\d{3,4})(?:'s|s|-?[хе]\b)", t)
    if "centur" in t or "век" in t or re.search(r"\bвв?\.", t):
        m = re.search(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th|-?(?:м|го|й))?\b", t) or None
        number = int(m.group(1)) if m else None
        if number is None:
            roman = re.search(r"\b([ivxl]+)\b", t)
            number = _roman(roman.group(1)) if roman else None
        if number is None:
            number = next((v for k, v in _EN_ORD_CENTURY.items() if re.search(rf"\b{k}\b", t)), None)
        if number:
            return f"century {number}{suffix}"
    if decade and not month:
        return f"{decade.group(1)}s{suffix}"
    if month and years:
        day = next((d for d in days if str(d) not in years), None) if len(days) > len(years) or days else None
        if day is not None and str(day) != years[0]:
            return f"{years[0]}-{month:02d}-{day:02d}"
        return f"{years[0]}-{month:02d}"
    if month and days:
        return f"--{month:02d}-{days[0]:02d}"
    if len(years) >= 2 and re.search(r"[-–—]|\band\b|\bto\b|\bпо\b|\bдо\b", t):
        return f"{years[0]}/{years[1]}{suffix}"
    if years:
        return f"{years[0]}{suffix}"
    return None


# a calendar date as a text writes it: "17 мая 2018", "May 17, 2018", "17 May 2018", "ноябре 2016",
# "November 2016", "2018-05-17", "17.05.2018"
_CALENDAR_RE = re.compile(
    rf"(?<!\w)(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}[./]\d{{1,2}}[./]\d{{4}}"
    rf"|(?:\d{{1,2}}\s+)?(?:{_RU_MONTH_RE}|{_EN_MONTH_RE})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?,?)?\s+\d{{4}})(?!\d)",
    re.IGNORECASE,
)


def calendar_dates(text: str) -> list[tuple[int, int, int | None]]:
    """(year, month, day or None) of every calendar date in ``text`` that names at least its
    month and year, in either language, in order."""
    out = []
    for match in _CALENDAR_RE.finditer(text):
        key = date_key(match.group(0))
        m = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", key or "")
        if m and 1 <= int(m.group(2)) <= 12:
            out.append((int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None))
    return out


def has_date_anchor(text: str) -> bool:
    """True for dates that pin a time (a digit, a month, a numbered century): 'centuries' does not."""
    t = text.lower()
    if re.search(r"\d", t):
        return True
    if ("centur" in t or "век" in t) and (
        any(re.search(rf"\b{k}\b", t) for k in _EN_ORD_CENTURY) or re.search(r"\b[ivxl]+\b", t)
    ):
        return True
    return any(_month_number(w) for w in re.findall(r"[a-zа-я]+\.?", t))


# ------------------------------------------------------------ number keys
_MULTIPLIERS = {
    "thousand": 3, "million": 6, "billion": 9, "trillion": 12,
    "тыс": 3, "тысяча": 3, "млн": 6, "миллион": 6, "млрд": 9, "миллиард": 9, "трлн": 12, "триллион": 12,
}
_EN_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "dozen": 12,
}
_FILLER = frozenset({"of", "and", "some", "about", "около", "более", "менее", "почти", "свыше"})
_UNIT_ALIASES = {"percent": "%", "per cent": "%", "процент": "%", "руб": "рубль", "долл": "доллар", "usd": "$"}


def scale_power(word: str, lang: str) -> int | None:
    """The power of ten a scale word multiplies by ("million" 6, «млн» and «миллионов» 6), or None."""
    word = word.lower().rstrip(".")
    power = _MULTIPLIERS.get(word) or _MULTIPLIERS.get(word.rstrip("s"))
    if power is None and lang == "ru":
        power = next((p for k, p in _MULTIPLIERS.items() if len(k) > 4 and word.startswith(k[:-1])), None)
    return power


def number_key(text: str, lang: str, lemmatise: Callable[[list[str], str], list[str]]) -> str | None:
    """``<value> <unit lemmas>`` for a number expression, or None when no value is found.

    ``lemmatise(words, lang)`` turns the unit words after the value into lemmas, so
    "5 млн рублей" and "5 млн рубля" share the key ``5000000 рубль``; multipliers are
    applied ("5 million" -> ``5000000``); a currency sign before the value becomes a unit.
    """
    t = " ".join(text.lower().replace("\u00a0", " ").replace("\u202f", " ").replace("−", "-").split())
    if lang == "ru":  # space groups thousands, comma is the decimal mark
        m = re.search(r"-?\d+(?: \d{3})*(?:,\d+)?", t)
        raw = m.group(0).replace(" ", "").replace(",", ".") if m else ""
    else:  # comma groups thousands
        m = re.search(r"-?\d[\d,]*(?:\.\d+)?", t)
        raw = m.group(0).replace(",", "") if m else ""
    value: Decimal | None = None
    try:
        value = Decimal(raw) if raw else None
    except InvalidOperation:
        value = None
    before, after = (t[: m.start()], t[m.end():]) if m else ("", t)
    words = re.findall(r"[^\W\d_]+|[%$€£]", after)
    if value is None and lang == "en":
        spelled = next((w for w in words if w in _EN_WORDS), None)
        if spelled is None:
            return None
        value = Decimal(_EN_WORDS[spelled])
        words.remove(spelled)
    if value is None:
        return None
    units: list[str] = [sign for sign in "$€£" if sign in before]
    for word in words:
        power = scale_power(word, lang)
        if power:
            value *= Decimal(10) ** power
        elif word not in _FILLER:
            units.append(word)
    value_text = format(value, "f")
    if "." in value_text:
        value_text = value_text.rstrip("0").rstrip(".")
    lemmas = lemmatise(units, lang) if units else []
    return " ".join([value_text, *(_UNIT_ALIASES.get(u, u) for u in lemmas)])


# Cardinal words a passage writes instead of digits ("four people", «четырёх человек»), by lemma.
# "one"/«один» are left out: far more often an article or a pronoun ("one of the...") than a count.
NUMBER_WORDS = {
    "en": {w: float(i) for i, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()) if w != "_"}
    | {"thirty": 30.0, "forty": 40.0, "fifty": 50.0, "sixty": 60.0, "seventy": 70.0, "eighty": 80.0, "ninety": 90.0,
       "hundred": 100.0, "dozen": 12.0},
    "ru": {w: float(i) for i, w in enumerate(
        "ноль _ два три четыре пять шесть семь восемь девять десять одиннадцать двенадцать тринадцать "
        "четырнадцать пятнадцать шестнадцать семнадцать восемнадцать девятнадцать двадцать".split()) if w != "_"}
    | {"двое": 2.0, "трое": 3.0, "четверо": 4.0, "пятеро": 5.0, "шестеро": 6.0, "семеро": 7.0, "тридцать": 30.0,
       "сорок": 40.0, "пятьдесят": 50.0, "шестьдесят": 60.0, "семьдесят": 70.0, "восемьдесят": 80.0,
       "девяносто": 90.0, "сто": 100.0, "дюжина": 12.0},
}


def number_word(lemma: str, lang: str) -> float | None:
    """The value of a cardinal written as a word (by its lemma), or None."""
    return NUMBER_WORDS.get(lang, {}).get(lemma)

