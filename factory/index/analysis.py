"""Text analysis for BM25: one function shared by indexing and querying.

Tokens are Unicode word runs (``\\w+``), lower-cased, with ``ё`` folded to ``е``.
Stop words are dropped on the surface form. Each token is then stemmed by the
Snowball stemmer of its script (PyStemmer): Cyrillic tokens with the Russian
stemmer, everything else with the English one, so an English name in a Russian
text (or the reverse) is still matched in any of its forms. The corpus language
only decides which stop-word lists apply; the stems are script-based.

Russian: the Snowball stemmer strips case endings, so «Заречинске», «Заречинска»
and «Заречинск» all become ``заречинск``.
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache
from typing import Any, Iterable

import Stemmer
from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_RUSSIAN

ANALYZER_VERSION = 1
_WORD = re.compile(r"\w+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")

# Stop-word lists kept by bm25s (Lucene's English list, the Snowball Russian list).
# The Russian list lacks «это» and the forms of «который», the commonest function
# words of news prose; they are added here.
_RU_EXTRA = (
    "это эта этим этими также который которая которое которые которого которой "
    "которому которым которыми котором которых которую"
).split()
STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset(STOPWORDS_EN),
    "ru": frozenset(w.replace("ё", "е") for w in (*STOPWORDS_RUSSIAN, *_RU_EXTRA)),
}
LANGS = ("en", "ru")


class Analyzer:
    """Turns text into BM25 terms. Thread-safe: each thread gets its own stemmers
    (PyStemmer objects must not be shared between threads)."""

    def __init__(self, lang: str) -> None:
        if lang not in LANGS:
            raise ValueError(f"unsupported language {lang!r}; known: {', '.join(LANGS)}")
        self.lang = lang
        # Russian texts quote English words and the reverse; the two lists do not
        # overlap (different scripts), so each language's list drops its own words.
        self.stopwords = STOPWORDS["en"] | STOPWORDS["ru"]
        self._local = threading.local()

    def _stemmers(self) -> tuple[Stemmer.Stemmer, Stemmer.Stemmer]:
        pair = getattr(self._local, "stemmers", None)
        if pair is None:
            pair = (Stemmer.Stemmer("english", 200_000), Stemmer.Stemmer("russian", 200_000))
            self._local.stemmers = pair
        return pair

    def __call__(self, text: str) -> list[str]:
        words = [w for w in _WORD.findall(text.lower().replace("ё", "е")) if w not in self.stopwords]
        if not words:
            return []
        en, ru = self._stemmers()
        return [(ru if _CYRILLIC.search(word) else en).stemWord(word) for word in words]

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(text) for text in texts]

    def spec(self) -> dict[str, Any]:
        """What the manifest records, so a changed analyser is noticed at load time."""
        return {
            "version": ANALYZER_VERSION,
            "lang": self.lang,
            "tokens": r"\w+, lower-case, ё->е",
            "stemmers": {"cyrillic": "snowball russian", "other": "snowball english"},
            "stemmer_library": f"PyStemmer {Stemmer.version()}",
            "stopwords": {"count": len(self.stopwords), "sha256": stopwords_hash(self.lang)},
        }


@lru_cache(maxsize=None)
def stopwords_hash(lang: str) -> str:
    words = STOPWORDS["en"] | STOPWORDS["ru"]
    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()
