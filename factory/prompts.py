"""Prompt files, per stage and language: ``factory/<stage>/prompts/<lang>/<name>``.

Templates are ``string.Template`` text (``$name`` placeholders) and short phrase lists
are YAML. Every stage reads its files through a ``PromptFolder`` here, so a validator
that checks a draft against the composer's prompts, or a fake that answers them,
reads those files without importing the composer.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from factory.errors import FactoryError

PACKAGE = Path(__file__).resolve().parent
LANGS = ("en", "ru")


class PromptError(FactoryError):
    pass


@lru_cache(maxsize=256)
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


class PromptFolder:
    """One stage's prompt files. ``suffix`` is added to names given without one;
    ``fallback`` is the language used for one the stage has no files for (None: an error)."""

    def __init__(self, stage: str, *, suffix: str = ".md", fallback: str | None = None) -> None:
        self.stage = stage
        self.root = PACKAGE / stage / "prompts"
        self.suffix = suffix
        self.fallback = fallback

    def path(self, lang: str, name: str) -> Path:
        if lang not in LANGS:
            if self.fallback is None:
                raise PromptError(f"no {self.stage} prompts for language {lang!r}; known: {', '.join(LANGS)}")
            lang = self.fallback
        return self.root / lang / (name if Path(name).suffix else name + self.suffix)

    def text(self, lang: str, name: str) -> str:
        path = self.path(lang, name)
        if not path.is_file():
            raise PromptError(f"{path}: no {name!r} prompt for language {lang!r}")
        return _read(path)

    def template(self, lang: str, name: str) -> Template:
        return Template(self.text(lang, name))

    def render(self, lang: str, name: str, **values: Any) -> str:
        """The template filled; a placeholder the caller does not fill is an error naming it."""
        try:
            return self.template(lang, name).substitute(**{k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"prompt {self.stage}/{lang}/{name} uses ${exc.args[0]} which the code does not fill") \
                from exc

    def phrases(self, lang: str, name: str = "phrases.yaml") -> dict[str, str]:
        """Short per-language lines (role labels, feedback texts) from a YAML file."""
        return _yaml(self.path(lang, name))

    def json_examples(self, lang: str) -> frozenset[str]:
        """The example values in the templates' ``JSON: {...}`` lines, case-folded.

        A weak model often copies them ("other ways to write the answer") into its
        answer; the schema validator refuses a draft that does.
        """
        return _json_examples(self.root / lang)


@lru_cache(maxsize=32)
def _yaml(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise PromptError(f"{path}: missing")
    return yaml.safe_load(_read(path))


@lru_cache(maxsize=8)
def _json_examples(folder: Path) -> frozenset[str]:
    found: set[str] = set()
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        for line in _read(path).splitlines():
            if line.startswith("JSON:"):
                try:
                    example = json.loads(line.split(":", 1)[1])
                except ValueError as exc:
                    raise PromptError(f"{path}: the JSON example line is not valid JSON ({exc})") from exc
                found.update(v.strip().casefold() for v in _string_values(example))
    return frozenset(v for v in found if v)


def _string_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_values(v)]
    return []


COMPOSER = PromptFolder("compose")  # fact sheet, composer and reviser
AGENT = PromptFolder("agent")  # the search agent
VALIDATORS = PromptFolder("validate", suffix=".txt", fallback="en")  # LLM checks and feedback texts
