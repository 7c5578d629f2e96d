"""One ingested and indexed copy of the English fixture corpus (BM25 only) for the
reliability tests; each test copies it so that its runs start from the same state."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def fixture_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from factory.index.fixed import build_index
    from factory.ingest import ingest
    from factory.settings import Settings
    from factory.store import Store

    root = tmp_path_factory.mktemp("reliability_world")
    store = Store(root / "store")
    ingest(FIXTURES / "corpus_en.jsonl", store, "en", Settings())
    build_index(store, root / "index", "en", dense=None, progress=False)
    return root


@pytest.fixture()
def world_copy(fixture_world: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(store folder, index folder): a private copy of the store; the index is read-only."""
    shutil.copytree(fixture_world / "store", tmp_path / "store")
    return tmp_path / "store", fixture_world / "index"


@pytest.fixture(scope="session")
def hostile_world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The hostile corpus ingested (entities on) and indexed; ``base`` is the store before any
    generation, ``store`` the same after a run with the obeying model that claims acceptance."""
    from factory.index.fixed import build_index
    from factory.ingest import ingest
    from factory.settings import Settings
    from factory.store import Store

    from reliability_kit import hostile_corpus, run_hostile_generation

    root = tmp_path_factory.mktemp("hostile_world")
    planted = hostile_corpus(root / "hostile.jsonl")
    summary = ingest(planted["path"], Store(root / "base"), "en", Settings())
    build_index(Store(root / "base"), root / "index", "en", dense=None, progress=False)
    shutil.copytree(root / "base", root / "store")
    run = run_hostile_generation(root / "store", root / "index", claims=True)
    return {"root": root, "base": root / "base", "store": root / "store", "index": root / "index",
            "planted": planted, "ingest": summary, **run}
