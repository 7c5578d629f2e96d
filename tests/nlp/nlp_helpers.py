"""Helpers for the entity-layer tests: chunks written straight into a store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def chunk_row(doc_id: str, n: int, text: str, lang: str, run_id: str = "test") -> dict[str, Any]:
    return {
        "chunk_id": f"{doc_id}_{n}", "doc_id": doc_id, "n": n, "lang": lang, "title": doc_id, "text": text,
        "content_hash": hashlib.sha256(text.encode()).hexdigest()[:16], "n_tokens": len(text.split()),
        "char_start": 0, "char_end": len(text), "run_id": run_id,
    }


def paragraph_chunks(path: Path, lang: str, limit: int | None = None, max_chars: int = 1200) -> list[dict[str, Any]]:
    """Documents of a JSONL corpus cut at paragraphs (and at ``max_chars``) into chunk rows."""
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if limit is not None and i >= limit:
                break
            doc = json.loads(line)
            pieces = []
            for para in (p.strip() for p in doc["text"].split("\n")):
                while para:
                    pieces.append(para[:max_chars])
                    para = para[max_chars:]
            rows.extend(chunk_row(doc["id"], n, piece, lang) for n, piece in enumerate(pieces))
    return rows


