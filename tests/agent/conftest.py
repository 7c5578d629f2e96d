"""Fixtures for the agent tests (helpers live in agentkit.py)."""

from __future__ import annotations

import pytest

from agentkit import KeywordSearcher, load_fixture


@pytest.fixture(scope="session")
def corpus_en() -> dict[str, str]:
    return load_fixture("en")


@pytest.fixture()
def searcher(corpus_en: dict[str, str]) -> KeywordSearcher:
    return KeywordSearcher(corpus_en)
