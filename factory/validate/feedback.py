"""Feedback texts per language (``prompts/<lang>/feedback.yaml``): the reviser reads them
in the language it writes in. Values are filled with ``str.format``; a value is never
parsed as a template itself, so corpus text in it is safe."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml


@lru_cache(maxsize=4)
def _texts(lang: str) -> dict[str, str]:
    folder = resources.files("factory.validate") / "prompts" / (lang if lang in {"en", "ru"} else "en")
    return yaml.safe_load((folder / "feedback.yaml").read_text(encoding="utf-8"))


def say(lang: str, key: str, **values: object) -> str:
    return _texts(lang)[key].format(**values)
