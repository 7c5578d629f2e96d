"""Chunks from the fixture corpora, written straight into a store's `chunks` table."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def chunk_rows(lang: str, words_per_chunk: int = 45) -> list[dict]:
    """Each fixture article split at sentence ends into chunks of about `words_per_chunk` words."""
    rows = []
    for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        pieces: list[str] = []
        current: list[str] = []
        for sentence in _SENTENCE_END.split(doc["text"]):
            current.append(sentence)
            if sum(len(s.split()) for s in current) >= words_per_chunk:
                pieces.append(" ".join(current))
                current = []
        if current:
            pieces.append(" ".join(current))
        for n, text in enumerate(pieces):
            rows.append(
                {
                    "chunk_id": f"{doc['id']}_{n}",
                    "doc_id": doc["id"],
                    "n": n,
                    "lang": lang,
                    "title": doc["title"],
                    "text": text,
                    "content_hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    "n_tokens": len(text.split()),
                }
            )
    return rows


@pytest.fixture()
def ru_rows() -> list[dict]:
    return chunk_rows("ru")


@pytest.fixture()
def en_rows() -> list[dict]:
    return chunk_rows("en")


@pytest.fixture()
def bilingual_store(store, ru_rows, en_rows):
    store.append("chunks", ru_rows + en_rows)
    return store
