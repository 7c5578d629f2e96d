"""What the fact sheet, the composer and the reviser share: prompt files, evidence
formatting, passage labels, and the error a failed fact sheet raises.

Corpus text is untrusted: it reaches the model only inside ``<passage>`` blocks (any
tag-like text inside is defused) and every system prompt says that instructions
found there are data.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from factory.errors import FactoryError
from factory.records import Subgraph

PROMPTS = Path(__file__).resolve().parent / "prompts"
_TAG = re.compile(r"</?\s*(passage|feedback|draft|history)\b", re.IGNORECASE)


class ComposeError(FactoryError):
    """The fact sheet could not be built; ``raw`` keeps what the model said."""

    def __init__(self, reason: str, raw: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


@lru_cache(maxsize=64)
def prompt(lang: str, name: str) -> Template:
    path = PROMPTS / lang / f"{name}.md"
    if not path.exists():
        raise FactoryError(f"{path}: no {name!r} prompt for language {lang!r}")
    return Template(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=8)
def phrases(lang: str) -> dict[str, str]:
    """Short per-language lines (role labels and the like) from ``prompts/<lang>/phrases.yaml``."""
    path = PROMPTS / lang / "phrases.yaml"
    if not path.exists():
        raise FactoryError(f"{path}: no phrases for language {lang!r}")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=8)
def template_placeholders(lang: str) -> frozenset[str]:
    """The example values in the prompts' ``JSON: {...}`` lines, case-folded.

    A weak model often copies them ("other ways to write the answer") into its draft;
    the schema validator refuses a draft that does.
    """
    found: set[str] = set()
    folder = PROMPTS / lang
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("JSON:"):
                try:
                    example = json.loads(line.split(":", 1)[1])
                except ValueError as exc:
                    raise FactoryError(f"{path}: the JSON example line is not valid JSON ({exc})") from exc
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


def render(lang: str, name: str, **values: Any) -> str:
    try:
        return prompt(lang, name).substitute(**{k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise FactoryError(f"prompt {lang}/{name}.md uses ${exc.args[0]} which the code does not fill") from exc


def defuse(text: str, limit: int = 0) -> str:
    """Untrusted text made safe to place inside a delimited block."""
    text = _TAG.sub(lambda m: m.group(0).replace("<", "‹"), text)
    if limit and len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " …"
    return text.strip()


def labels_for(subgraph: Subgraph) -> dict[str, str]:
    """Passage label (P1, P2, ...) -> chunk id, in subgraph order."""
    return {f"P{i}": chunk_id for i, chunk_id in enumerate(subgraph.chunk_ids, 1)}


def entity_name(subgraph: Subgraph, key: str | None) -> str:
    if not key:
        return ""
    info = subgraph.figures.get("entities", {}).get(key) or {}
    return info.get("name") or key


def entity_aliases(subgraph: Subgraph, key: str | None) -> list[str]:
    info = subgraph.figures.get("entities", {}).get(key or "") or {}
    return list(info.get("aliases") or [])
