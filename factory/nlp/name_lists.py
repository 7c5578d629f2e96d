"""Curated lists of one entity's names (``factory/nlp/names/<lang>.yaml``), keyed.

Each entry names an entity (``name``, ``label``) and its other ``forms``; ``listed_keys``
turns them into ``form key -> (name key, entry name)`` with ``factory.nlp.keys.entity_key``,
under the entry's label and without one (a mention's key depends on the label NER gave
it), so that the lists hold text, not keys. A malformed file, an entry without a name or
forms, or a form listed under two entries is an error naming the file and the entry.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from factory.errors import FactoryError
from factory.nlp.keys import entity_key
from factory.nlp.labels import NAMED


class NameListError(FactoryError):
    pass


class NameEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    label: str
    forms: tuple[str, ...] = Field(min_length=1)


def _path(lang: str):
    return resources.files("factory.nlp") / "names" / f"{lang}.yaml"


@lru_cache(maxsize=4)
def load_name_list(lang: str) -> tuple[NameEntry, ...]:
    """The entries of a language's list (empty when the language has none)."""
    path = _path(lang)
    return read_name_list(path) if path.is_file() else ()


def read_name_list(path) -> tuple[NameEntry, ...]:
    """Entries of one list file, checked (see the module docstring)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except yaml.YAMLError as exc:
        raise NameListError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(raw, list):
        raise NameListError(f"{path}: expected a list of entries")
    entries = []
    for number, item in enumerate(raw, 1):
        try:
            entry = NameEntry.model_validate(item)
        except ValidationError as exc:
            raise NameListError(f"{path}: entry {number} ({item!r:.60}): {exc.errors()[0]['msg']}") from exc
        if entry.label not in NAMED:
            raise NameListError(f"{path}: entry {number} ({entry.name}): unknown label {entry.label!r}")
        entries.append(entry)
    return tuple(entries)


@lru_cache(maxsize=4)
def listed_keys(lang: str) -> dict[str, tuple[str, str]]:
    """form key -> (the entry's name key, the entry's name), for every listed form."""
    return keys_of(load_name_list(lang), lang, _path(lang))


def keys_of(entries, lang: str, where: object = "name list") -> dict[str, tuple[str, str]]:
    owner: dict[str, tuple[str, str]] = {}
    for number, entry in enumerate(entries, 1):
        target = entity_key(entry.name, lang, entry.label)
        for form in (entry.name, *entry.forms):
            for key in {entity_key(form, lang, entry.label), entity_key(form, lang)} - {""}:
                known = owner.setdefault(key, (target, entry.name))
                if known[0] != target:
                    raise NameListError(f"{where}: entry {number} ({entry.name}): form {form!r} is "
                                        f"already a name of {known[1]!r}")
    return {key: value for key, value in owner.items() if key != value[0]}
