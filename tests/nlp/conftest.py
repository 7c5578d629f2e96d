"""Fixtures for the entity-layer tests."""

from __future__ import annotations

import pytest
from nlp_helpers import FIXTURES, paragraph_chunks


@pytest.fixture()
def fixture_chunks():
    def load(lang: str) -> list[dict]:
        return paragraph_chunks(FIXTURES / f"corpus_{lang}.jsonl", lang)

    return load
