"""Entity keys, word lemmas and text normalisation for English and Russian.

Mentions of one entity must share a key: "Санкт-Петербурге" and "Санкт-Петербург",
"Ивана Петрова" and "Иван Петров", "the U.S." and "US". The same functions are what
the leakage validator uses to compare a question with an answer, so they are public:

* ``normalize(text, lang)``: case folded (ё -> е), stress marks and Latin accents
  removed, dotted acronyms joined (U.S. -> us), English possessive 's dropped,
  punctuation folded to single spaces.
* ``lemmas(text, lang)``: lower-case word lemmas. Russian: pymorphy3 normal forms
  (capitalised words prefer proper-noun readings: names, surnames, places,
  organisations); hyphenated words are split after lemmatising. English: Snowball
  (Porter 2) stems from PyStemmer, because spaCy's lemmatizer is not loaded.
* ``entity_key(text, lang, label=None)``: the key mentions are grouped by. Dates and
  numbers get canonical keys (``2001-03-12``, ``5000000 рубль``); Russian names are
  lemmatised word by word (label-aware), a person's words together as one name
  (``factory.nlp.ru_names``: «Константина Сомова» -> ``константин сомов``);
  English names are normalised but not stemmed ("Williams" is not "William").
* ``translit(text)``: a Latin comparison skeleton for either script, so "Ельцин" and
  "Yeltsin" give the same string.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from factory.nlp.morph import morph
from factory.nlp.quantities import date_key, number_key
from factory.nlp.ru_names import person_lemmas

_WORD_RE = re.compile(r"[^\W_]+(?:[-‐‑][^\W_]+)*")
_ACRONYM_DOTS = re.compile(r"\b(?:[^\W\d_]\.){2,}")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
_STRESS = {"\u0301", "\u0300"}
# legal forms that do not distinguish organisations ("ОАО «Газпром»" is "Газпром")
_LEGAL_FORMS = frozenset(
    "ооо оао зао пао ао фгуп гуп муп нко ип inc ltd llc corp co plc gmbh ag sa".split()
)
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")

_ADJECTIVE_END = re.compile(r"[сц]к(?:ий|ая|ое|ие|ого|ой|ому|им|ом|ую|их|ими|ым|ых|ыми)$")
_PROPER = ("Name", "Surn", "Patr", "Geox", "Orgn", "Trad", "Abbr")
_PREFER = {
    "person": ("Name", "Surn", "Patr"),
    "location": ("Geox",),
    "organization": ("Orgn", "Abbr", "Trad"),
}


def _fold_marks(text: str) -> str:
    """Drop stress marks everywhere and accents on Latin letters; keep й and ё intact."""
    out: list[str] = []
    base_latin = False
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch):
            if ch in _STRESS or base_latin:
                continue
        else:
            base_latin = ch.isascii() or "LATIN" in unicodedata.name(ch, "")
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _fold_marks(text)
    text = _ACRONYM_DOTS.sub(lambda m: m.group(0).replace(".", ""), text)
    return _POSSESSIVE.sub("", text)


def normalize(text: str, lang: str = "en") -> str:
    """Case and punctuation folded text: 'Санкт-Петербург!' -> 'санкт петербург'."""
    text = _prepare(text).casefold().replace("ё", "е")
    return " ".join(re.findall(r"[^\W_]+", text))


# ------------------------------------------------------------------ lemmas
@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=500_000)
def _ru_lemma(word: str, capitalised: bool, prefer: tuple[str, ...]) -> str:
    parses = morph().parse(word.lower())
    if not parses:
        return word.lower()
    if len(word) > 1 and word.isupper():
        # an acronym is not a word form: МОК is not "мокнуть", РОИ is not "рой"
        abbr = next((p for p in parses if "Abbr" in p.tag), None)
        if abbr is not None:
            return abbr.normal_form
        if len(word) <= 5:
            return word.lower()
    choice = None
    if _ADJECTIVE_END.search(word.lower()) and not morph().word_is_known(word.lower()):
        # an unknown place adjective («Заречинская»): the guesser's noun readings
        # ("заречинскай") are noise, the adjective reading is the lemma
        choice = next((p for p in parses if p.tag.POS == "ADJF"), None)
        if choice is not None:
            return choice.normal_form
    if prefer:
        choice = _declinable_first([p for p in parses if any(g in p.tag for g in prefer)])
    if choice is None and capitalised:
        choice = _declinable_first([p for p in parses if any(g in p.tag for g in _PROPER)])
    if choice is None:
        # prefer a noun reading, then the most probable one
        choice = next((p for p in parses if p.tag.POS == "NOUN"), parses[0]) if capitalised else parses[0]
    return choice.normal_form


def _declinable_first(parses: list):
    """The first reading that declines: «Анне» is a form of Анна before it is the fixed name Анне."""
    if not parses:
        return None
    return next((p for p in parses if "Fixd" not in p.tag), parses[0])


def _is_cyrillic(word: str) -> bool:
    return any("\u0400" <= ch <= "\u04ff" for ch in word)


def _lemmatise_words(words: list[str], lang: str, prefer: tuple[str, ...] = ()) -> list[str]:
    out: list[str] = []
    if lang == "ru":
        for word in words:
            if _is_cyrillic(word):
                lemma = _ru_lemma(word, word[:1].isupper(), prefer if not word.isupper() else ())
            else:
                lemma = word.lower()
            out.extend(re.split(r"[-‐‑]", lemma.replace("ё", "е")))
    else:
        for word in words:
            out.extend(p for p in re.split(r"[-‐‑]", word.casefold()) if p)
    return [w for w in out if w]


def lemmas(text: str, lang: str) -> list[str]:
    """Lower-case word lemmas (Russian: pymorphy3; English: Snowball stems)."""
    words = _WORD_RE.findall(_prepare(text))
    if lang == "ru":
        return _lemmatise_words(words, "ru")
    folded = _lemmatise_words(words, "en")
    return [w.replace("ё", "е") for w in _stemmer().stemWords(folded)]


# ------------------------------------------------------------- entity keys
def _name_key(text: str, lang: str, label: str | None) -> str:
    words = _WORD_RE.findall(_prepare(text))
    if lang == "ru" and label == "person":
        parts = person_lemmas(words)  # the words of a name read together (factory.nlp.ru_names)
    elif lang == "ru":
        parts = _lemmatise_words(words, "ru", _PREFER.get(label or "", ()))
    else:
        parts = _lemmatise_words(words, "en")
    key = " ".join(normalize(" ".join(parts), lang).split())
    if lang != "ru":
        key = _LEADING_ARTICLE.sub("", key)
    if label in (None, "organization"):
        tokens = key.split()
        while len(tokens) > 1 and tokens[0] in _LEGAL_FORMS:
            tokens.pop(0)
        while len(tokens) > 1 and tokens[-1] in _LEGAL_FORMS:
            tokens.pop()
        key = " ".join(tokens)
    return key


@lru_cache(maxsize=500_000)
def entity_key(text: str, lang: str, label: str | None = None) -> str:
    """The key that groups mentions of one entity (see the module docstring)."""
    if label == "date":
        canonical = date_key(_prepare(text))
        if canonical:
            return canonical
    elif label == "number":
        canonical = number_key(_prepare(text), lang, _lemmatise_words)
        if canonical:
            return canonical
    return _name_key(text, lang, label)


# ------------------------------------------------------------ transliteration
_CYR2LAT = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y",
    "ь": "", "э": "e", "ю": "yu", "я": "ya", "і": "i", "ї": "yi", "є": "ye", "ґ": "g",
}
_VOWELS = set("аеёиоуыэюяaeiou")
# spelling variants that English renderings of Russian names use interchangeably
_LATIN_FOLDS = [
    (re.compile(r"tch"), "ch"), (re.compile(r"kh"), "h"), (re.compile(r"(?:ts|tz|cz)"), "c"),
    (re.compile(r"ks"), "x"), (re.compile(r"w"), "v"), (re.compile(r"ph"), "f"), (re.compile(r"j"), "y"),
    (re.compile(r"(?:iy|yi|ii|ij)\b"), "y"), (re.compile(r"y"), "i"), (re.compile(r"(?<=[aeou])i(?=e)"), ""), (re.compile(r"ck"), "k"),
    (re.compile(r"c(?=[aou]|\b)"), "k"), (re.compile(r"(\w)\1"), r"\1"), (re.compile(r"e(?=\b)"), ""),
]


def translit(text: str) -> str:
    """A Latin comparison skeleton of Cyrillic or Latin text ('Ельцин' and 'Yeltsin' -> 'ielcin').

    Not a readable romanisation: spelling variants (y/i, kh/h, ts/c, doubled letters,
    a final e) are folded so that two renderings of one name meet.
    """
    text = normalize(text)
    out: list[str] = []
    prev = " "
    for ch in text:
        if ch == "е" and (prev == " " or prev in _VOWELS or prev in "ъь"):
            out.append("ye")  # word-initial and post-vowel е sounds as 'ye'
        else:
            out.append(_CYR2LAT.get(ch, ch))
        prev = ch
    latin = "".join(out)
    for pattern, replacement in _LATIN_FOLDS:
        latin = pattern.sub(replacement, latin)
    return " ".join(latin.split())
