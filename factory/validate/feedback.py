"""Feedback texts per language (``prompts/<lang>/feedback.yaml``): the reviser reads them
in the language it writes in. Values are filled with ``str.format``; a value is never
parsed as a template itself, so corpus text in it is safe."""

from __future__ import annotations

from factory.prompts import VALIDATORS


def say(lang: str, key: str, **values: object) -> str:
    return VALIDATORS.phrases(lang, "feedback.yaml")[key].format(**values)
