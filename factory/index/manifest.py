"""The manifest of a fixed index (``manifest.json``): what was indexed, how, and from which corpus.

Its two fingerprints tie the index to its corpus (``factory.index.corpus_check``
computes and checks them); ``factory.index.fixed`` builds and opens the index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from factory.index.base import SearchIndexError

FORMAT_VERSION = 1
INDEX_TEXT = "title + '\\n' + text (text alone when the title is empty)"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DenseInfo(_Model):
    model: str
    dim: int
    files: dict[str, str]
    files_hash: str
    batch_size: int


class Manifest(_Model):
    format_version: int = FORMAT_VERSION
    lang: str
    chunk_count: int
    corpus_fingerprint: str
    text_fingerprint: str
    index_text: str = INDEX_TEXT
    analyzer: dict[str, Any]
    bm25: dict[str, Any]
    dense: DenseInfo | None = None
    libraries: dict[str, str]
    files: dict[str, str]
    built_at: str
    build_seconds: float


def read_manifest(path: str | Path) -> Manifest:
    path = Path(path)
    file = path / "manifest.json"
    if not path.exists():
        raise SearchIndexError(f"{path}: no index here; build one with `factory index build --store PATH --out {path}`")
    if not file.is_file():
        raise SearchIndexError(f"{file}: missing, so {path} is not an index (or its build did not finish); rebuild it")
    try:
        manifest = Manifest.model_validate_json(file.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise SearchIndexError(f"{file}: not a valid index manifest: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}") from exc
    if manifest.format_version > FORMAT_VERSION:
        raise SearchIndexError(f"{file}: index format {manifest.format_version} is newer than this factory's ({FORMAT_VERSION})")
    return manifest
