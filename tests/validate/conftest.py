"""Shared pieces for the validator tests: fixture chunks, a fixed index with distractors, contexts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.settings import ValidateSettings
from factory.validate.base import DictChunks, ValidationContext
from factory.validate.tokens import Lexicon

from planted_drafts import chunk_texts

# distractors from the shared corpora, so that top-10 means something (a fixture corpus is ~20 chunks)
DISTRACTORS = {"en": ("en-wiki-vital", 3000), "ru": ("ru-wikinews", 933)}


def distractor_chunks(shared: Path, lang: str) -> dict[str, tuple[str, str]]:
    name, limit = DISTRACTORS[lang]
    out: dict[str, tuple[str, str]] = {}
    with open(shared / name / "docs.jsonl", encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i >= limit:
                break
            doc = json.loads(line)
            out[f"{doc['id']}_0"] = (doc.get("title", ""), doc["text"][:1500])
    return out


@pytest.fixture(scope="session")
def corpus_chunks(shared_corpora: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """lang -> chunk_id -> (title, text): fixture articles plus distractors."""
    return {lang: {**distractor_chunks(shared_corpora, lang), **chunk_texts(lang)} for lang in ("en", "ru")}


@pytest.fixture(scope="session")
def fixed_indices(corpus_chunks, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A real fixed index per language (BM25 + the hashing dense fake, hybrid by RRF)."""
    from factory.index.fixed import build_index_from_chunks, open_index

    out = {}
    for lang, chunks in corpus_chunks.items():
        folder = tmp_path_factory.mktemp(f"index-{lang}") / "index"
        rows = [{"chunk_id": cid, "title": title, "text": text, "content_hash": str(hash(text))}
                for cid, (title, text) in sorted(chunks.items())]
        build_index_from_chunks(rows, folder, lang, dense="hashing", progress=False)
        out[lang] = open_index(folder)
    return out


def make_context(chunks: dict[str, tuple[str, str]], *, searchers=None, llm=None, settings=None,
                 lexicon: Lexicon | None = None) -> ValidationContext:
    source = DictChunks({c: t for c, (_, t) in chunks.items()}, {c: title for c, (title, _) in chunks.items()})
    return ValidationContext(
        settings=settings or ValidateSettings(),
        chunks=source,
        searchers=searchers or {},
        llm=llm,
        lexicon=lexicon or Lexicon.from_texts(source.all_texts()),
    )


@pytest.fixture(scope="session")
def contexts(corpus_chunks) -> dict[str, ValidationContext]:
    return {lang: make_context(chunks) for lang, chunks in corpus_chunks.items()}
