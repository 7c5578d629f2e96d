"""Selection over the fixture corpora after real NER and statistics (slow: runs the NER models)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from factory.graph.select import NoSubgraph, SelectionIndex, select_subgraph
from factory.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TAX = load_taxonomy()


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    from factory.ingest import ingest
    from factory.store import Store

    store = Store(tmp_path_factory.mktemp("fixtures") / "store")
    for lang in ("en", "ru"):
        ingest(FIXTURES / f"corpus_{lang}.jsonl", store, lang)
    return store


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_every_mechanic_selects_and_chains_connect(annotated, lang):
    held: dict[str, set[str]] = {}
    for row in annotated.query("SELECT chunk_id, entity_key FROM current_chunk_entities WHERE lang = ?", [lang]):
        held.setdefault(row["chunk_id"], set()).add(row["entity_key"])
    docs = {r["chunk_id"]: r["doc_id"] for r in annotated.query("SELECT chunk_id, doc_id FROM chunks")}
    index = SelectionIndex.load(annotated, lang)
    assert index.source == "chunk_entities"
    found: dict[str, int] = {}
    refused: dict[str, list[str]] = {}
    for cell in TAX.cells(lang):
        for seed in range(3):
            try:
                sub = select_subgraph(index, cell, lang, random.Random(seed), taxonomy=TAX)
            except NoSubgraph as exc:
                refused.setdefault(cell.mechanic, []).append(exc.reason)
                continue
            found[cell.mechanic] = found.get(cell.mechanic, 0) + 1
            ids = sub.chunk_ids
            assert len({docs[c] for c in ids}) == len(ids), "support chunks come from different documents"
            if cell.mechanic in ("chain", "temporal", "calculation"):
                for (left, right), bridge in zip(zip(ids, ids[1:]), sub.bridge_entities):
                    assert bridge in held[left] and bridge in held[right], f"{cell.key}: {left} / {right} share {bridge}"
            if sub.answer_entity and cell.mechanic in ("chain", "temporal"):
                assert sub.answer_entity in held[ids[-1]]
                assert not any(sub.answer_entity in held[c] for c in ids[:-1])
            if cell.mechanic == "intersection":
                assert all(sub.answer_entity in held[c] for c in ids)
    # the fixture worlds have no three things of one kind in a group (their towns, people and
    # firms are all different kinds by their first sentences): comparison is refused for that
    # reason, and tests/graph/test_select_world.py shows it selecting where there are
    assert "comparison" not in found
    assert any("of one kind" in why for why in refused["comparison"]), refused["comparison"]
    assert set(found) == set(TAX.mechanics) - {"comparison"}, f"mechanics without any subgraph in {lang}: {set(TAX.mechanics) - set(found)}"
