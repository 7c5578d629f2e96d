"""The one pymorphy3 analyser of the process (its dictionaries take a second and some 15 MB to load)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def morph():
    import pymorphy3

    return pymorphy3.MorphAnalyzer(lang="ru")
