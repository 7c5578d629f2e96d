"""Token-level text keys shared by the leakage check, answer matching and the shortcut report.

A token carries several keys so that two spellings of one word meet on at least one:
the case-folded form, a lemma (pymorphy3 for Cyrillic words, so any inflected Russian
form meets its dictionary form), a Snowball stem (PyStemmer, per script) and a Latin
skeleton (transliterated, doubled letters collapsed) for near matches across scripts
and small misspellings.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

import Stemmer

from factory.nlp.morph import morph

# a number with group separators or a decimal part, else a word (hyphen/apostrophe joined)
_NUMBER = r"\d{1,3}(?:[ \u00a0\u202f,]\d{3})+(?:[.,]\d+)?(?!\d)|\d+(?:[.,]\d+)?"
_WORD = r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*|[^\W_]+"  # hyphenated words split: Edmund-Carrow, Спасо-Калменский
TOKEN_RE = re.compile(f"(?:{_NUMBER})|(?:{_WORD})")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")

_TRANSLIT = dict(
    zip(
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
        ["a", "b", "v", "g", "d", "e", "e", "zh", "z", "i", "i", "k", "l", "m", "n", "o", "p", "r", "s", "t",
         "u", "f", "h", "ts", "ch", "sh", "sch", "", "y", "", "e", "yu", "ya"],
    )
)
# spelling variants that transliteration and sloppy writing produce, folded to one form
_SKELETON_RULES = [("kh", "h"), ("ph", "f"), ("ck", "k"), ("oo", "u"), ("ee", "i"), ("ou", "u"),
                   ("w", "v"), ("y", "i"), ("j", "i"), ("q", "k"), ("c", "k"), ("x", "ks")]


@lru_cache(maxsize=2)
def stopwords(lang: str) -> frozenset[str]:
    """spaCy's stop-word list, read from its file: importing it as ``spacy.lang.xx.stop_words``
    first imports the spacy package (thinc, torch: about 2 s of CPU and hundreds of MB in a
    generation worker that never runs spaCy) for one set of words."""
    import importlib.util

    package = importlib.util.find_spec("spacy")
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("spacy is not installed")
    path = Path(package.submodule_search_locations[0]) / "lang" / ("ru" if lang == "ru" else "en") / "stop_words.py"
    spec = importlib.util.spec_from_file_location(f"_stop_words_{lang}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.STOP_WORDS)


ALL_STOPWORDS_LANGS = ("en", "ru")


def is_stopword(fold: str) -> bool:
    return any(fold in stopwords(lang) for lang in ALL_STOPWORDS_LANGS)


@lru_cache(maxsize=2)
def _stemmer(lang: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer("russian" if lang == "ru" else "english")


def fold(text: str) -> str:
    """Case-folded, accents removed (but Cyrillic й/ё kept apart from their bases), ё -> е."""
    text = text.casefold().replace("ё", "е").replace("\u2019", "'")
    decomposed = unicodedata.normalize("NFD", text)
    out = []
    for ch in decomposed:
        if unicodedata.combining(ch) and out and not _CYRILLIC.match(out[-1]):
            continue  # drop Latin diacritics; Cyrillic й keeps its breve
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def translit(text: str) -> str:
    return "".join(_TRANSLIT.get(ch, ch) for ch in text)


def skeleton(text: str) -> str:
    """A Latin spelling skeleton: transliterated, variant spellings folded, doubles collapsed."""
    value = translit(fold(text))
    for old, new in _SKELETON_RULES:
        value = value.replace(old, new)
    return re.sub(r"(.)\1+", r"\1", value)


def number_value(text: str, lang: str = "en") -> str | None:
    """'5,200' -> '5200', '48 300' -> '48300', '6,4' (ru) -> '6.4'; None if not a number."""
    raw = text.replace("\u00a0", " ").replace("\u202f", " ")
    if not re.fullmatch(_NUMBER, raw):
        return None
    raw = raw.replace(" ", "")
    if "," in raw and "." in raw:
        raw = raw.replace(",", "")
    elif "," in raw:
        head, _, tail = raw.rpartition(",")
        # a comma before exactly three digits groups thousands in English; Russian uses it as the decimal point
        raw = raw.replace(",", "") if (len(tail) == 3 and lang != "ru") else f"{head.replace(',', '')}.{tail}"
    if "." in raw:
        raw = raw.rstrip("0").rstrip(".")
    return raw.lstrip("0") or "0"


@dataclass(frozen=True, slots=True)
class Token:
    surface: str
    start: int
    fold: str
    lemma: str
    stem: str
    number: str | None

    @property
    def cyrillic(self) -> bool:
        return bool(_CYRILLIC.search(self.fold))

    @property
    def stop(self) -> bool:
        return self.number is None and is_stopword(self.fold)

    @property
    def capitalised(self) -> bool:
        return self.surface[:1].isupper()


@lru_cache(maxsize=200_000)
def _word_keys(word: str) -> tuple[str, str]:
    """(lemma, stem) of one case-folded word, by its own script."""
    if word.endswith("'s"):
        word = word[:-2]
    if _CYRILLIC.search(word):
        lemma = morph().parse(word)[0].normal_form.replace("ё", "е")
        return lemma, _stemmer("ru").stemWord(word)
    stem = _stemmer("en").stemWord(word)
    return word, stem


def tokenize(text: str, lang: str = "en") -> list[Token]:
    return list(_tokens(text or "", lang))


# A draft's passages are tokenized by several checks, again for each revision: 3.7 ms a
# 1,000-character news passage, 5 us from this memo of whole texts (1,024 such texts
# hold about 40 MB; more than the passages of 128 candidates in flight). Tokens are
# frozen; callers get a fresh list.
@lru_cache(maxsize=1024)
def _tokens(text: str, lang: str) -> tuple[Token, ...]:
    tokens = []
    for match in TOKEN_RE.finditer(text):
        surface = match.group(0)
        number = number_value(surface, lang) if surface[:1].isdigit() else None
        folded = fold(surface)
        if number is not None:
            tokens.append(Token(surface, match.start(), folded, number, number, number))
            continue
        lemma, stem = _word_keys(folded)
        tokens.append(Token(surface, match.start(), folded, lemma, stem, None))
    return tuple(tokens)


def content(tokens: Iterable[Token]) -> list[Token]:
    return [t for t in tokens if not t.stop]


def similar(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b).ratio()


def token_match(name: Token, other: Token, threshold: float) -> str | None:
    """How a name token matches another token: 'exact', 'lemma', 'near' or None."""
    if name.number is not None or other.number is not None:
        return "exact" if name.number is not None and name.number == other.number else None
    if name.fold == other.fold:
        return "exact"
    if name.lemma == other.lemma or name.stem == other.stem:
        return "lemma"
    a, b = skeleton(name.stem), skeleton(other.stem)
    if len(a) >= 4 and len(b) >= 4:
        pairs = ((name.fold, other.fold), (skeleton(name.fold), skeleton(other.fold)), (a, b))
        if a == b or any(similar(x, y) >= threshold for x, y in pairs):
            return "near"
        # a derived form of a proper name: Ашкель -> Ашкельская, Vellmoor -> Vellmoorian
        if len(a) >= 5 and b.startswith(a) and len(b) - len(a) <= 5:
            return "near"
    return None


_PROPER_TAGS = {"Name", "Surn", "Patr", "Geox", "Orgn", "Trad", "Abbr"}


class Lexicon:
    """Which words are ordinary vocabulary, so a lone one of them in a question leaks no name.

    Built from the corpus itself: a word seen in lower case inside a sentence is a
    common word ('river', 'valley'); a word only ever written capitalised is a name
    ('Ashkel'). Russian words the pymorphy3 dictionary knows, and not as a name, are
    common too.
    """

    def __init__(self, common: Iterable[str] = ()) -> None:
        # a frozen set is kept as it is: selection wraps the corpus's 50k-word set once per
        # entity it judges, and copying it each time was most of building the answer pools
        self.common = common if isinstance(common, frozenset) else frozenset(common)

    @classmethod
    def from_texts(cls, texts: Iterable[str], lang: str = "en", *, max_texts: int = 50_000) -> "Lexicon":
        common: set[str] = set()
        for i, text in enumerate(texts):
            if i >= max_texts:
                break
            for match in TOKEN_RE.finditer(text or ""):
                word = match.group(0)
                if word[:1].islower():
                    folded = fold(word)
                    lemma, stem = _word_keys(folded)
                    common.add(lemma)
                    # Russian adjectives of names are lower case ('заречинского стекла'): their
                    # stem equals the name's ('заречинск'), so only lemmas count for Cyrillic
                    if not _CYRILLIC.search(folded):
                        common.add(stem)
        return cls(common)

    def is_common(self, token: Token) -> bool:
        if token.number is not None:
            return len(token.number.replace(".", "")) < 3  # '12' is ordinary, '1834' is specific
        if token.stop or token.lemma in self.common:
            return True
        if token.cyrillic:
            return _known_common_ru(token.fold)
        return token.stem in self.common


@lru_cache(maxsize=100_000)
def _known_common_ru(word: str) -> bool:
    analyser = morph()
    if not analyser.word_is_known(word):
        return False
    return not any(_PROPER_TAGS & set(str(p.tag).replace(" ", ",").split(",")) for p in analyser.parse(word)[:3])


def proper_starts(text: str, tokens: Iterable[Token]) -> set[int]:
    """Offsets of tokens written as names: capitalised, not at the start of a sentence."""
    out = set()
    for token in tokens:
        if not token.capitalised or token.number is not None:
            continue
        before = text[: token.start].rstrip(" \t\u00a0\"'«„“(")
        if before and before[-1] not in ".!?:\n":
            out.add(token.start)
    return out


def rarest(text: str, lang: str, doc_freq: Callable[[str], int], n: int, *,
           skip: set[str] | frozenset[str] = frozenset(), max_df: int | None = None) -> list[Token]:
    """The ``n`` content words of ``text`` a search engine ranks it by: fewest documents
    first (``doc_freq``, the fixed index's count; 0 = not indexed, left out; above ``max_df``,
    left out), one per lemma, none whose lemma or stem is in ``skip``. Returned in the order
    they appear."""
    seen: set[str] = set()
    ranked: list[tuple[int, int, Token]] = []
    for position, token in enumerate(content(tokenize(text, lang))):
        if token.lemma in skip or token.stem in skip or token.lemma in seen:
            continue
        seen.add(token.lemma)
        df = doc_freq(token.surface)
        if df and (max_df is None or df <= max_df):
            ranked.append((df, position, token))
    chosen = sorted(ranked, key=lambda r: (r[0], r[1]))[:n]
    return [token for _, _, token in sorted(chosen, key=lambda r: r[1])]


# Words that only ask and say nothing of what is asked about ("Назовите его", "как зовут", "чьё"):
# a solver searching a question's keywords leaves them out. spaCy's stop lists lack them.
_ASKING = {"ru": ("назовите", "назвать", "зовут", "звать", "чей", "чья", "чьё", "чьи", "искомый", "искомое"),
           "en": ()}


@lru_cache(maxsize=4)
def asking_keys(lang: str) -> frozenset[str]:
    """Lemmas and stems of the words that only ask (for ``rarest``'s ``skip``)."""
    return frozenset(keys_of(_ASKING.get(lang, ()), lang))


def keys_of(texts: Iterable[str], lang: str) -> set[str]:
    """Every lemma and stem of the texts' words (for ``rarest``'s ``skip``)."""
    return {k for text in texts for t in tokenize(text, lang) for k in (t.lemma, t.stem)}
