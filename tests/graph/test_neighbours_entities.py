"""find_entity, neighbours, ego_subgraph and `factory entity` over the fixture corpora."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from factory.graph.neighbours import ego_subgraph, find_entity, neighbours, suggest_entities
from factory.graph.stats import compute_statistics
from factory.nlp.pipeline import annotate_chunks
from factory.settings import Settings
from factory.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Store:
    store = Store(tmp_path_factory.mktemp("world") / "store")
    settings = Settings(nlp={"n_process": 1})
    for lang in ("en", "ru"):
        rows = []
        for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            for n, para in enumerate(p for p in doc["text"].split("\n") if p.strip()):
                rows.append({"chunk_id": f"{doc['id']}_{n}", "doc_id": doc["id"], "n": n, "lang": lang,
                             "title": doc["title"], "text": para, "n_tokens": len(para.split()),
                             "content_hash": hashlib.sha256(para.encode()).hexdigest()[:16],
                             "char_start": 0, "char_end": len(para), "run_id": "t"})
        store.append("chunks", rows)
        annotate_chunks(store, lang, settings, "t", progress=False)
    compute_statistics(store, "t")
    return store


def test_find_entity_by_any_form(world) -> None:
    for form in ("Заречинск", "Заречинске", "Заречинска", "заречинску"):
        rows = find_entity(world, form, "ru")
        assert rows and rows[0]["entity_key"] == "заречинск", form
    # by an alias link: the acronym finds the full name
    rows = find_entity(world, "ЗСЗ", "ru")
    assert rows and rows[0]["entity_key"] == "заречинский стекольный завод"
    assert "ЗСЗ" in rows[0]["aliases"]
    rows = find_entity(world, "NCS", "en")
    assert rows and rows[0]["entity_key"] == "northern cartographic society"
    assert find_entity(world, "Vellmoor")[0]["lang"] == "en"
    assert find_entity(world, "Nowhere Such Place", "en") == []
    # a surname alone finds the person's full key
    rows = find_entity(world, "Oswick", "en")
    assert rows and rows[0]["entity_key"] == "maren oswick" and rows[0]["match"] == "surname"
    rows = find_entity(world, "Брагина", "ru")
    assert "петр брагин" in {r["entity_key"] for r in rows}


def test_suggestions_for_a_misspelt_name(world) -> None:
    names = [r["entity_key"] for r in suggest_entities(world, "Velmoor", "en")]
    assert "vellmoor" in names


def test_neighbours_filters_and_orders(world) -> None:
    rows = neighbours(world, "vellmoor", limit=100, lang="en")
    assert rows and all(r["entity_key"] != "vellmoor" for r in rows)
    assert [r["npmi"] for r in rows] == sorted((r["npmi"] for r in rows), reverse=True)
    keys = {r["entity_key"] for r in rows}
    assert "maren oswick" in keys
    cut = rows[len(rows) // 2]["npmi"]
    strong = neighbours(world, "vellmoor", min_npmi=cut, lang="en", limit=100)
    assert strong and all(r["npmi"] >= cut for r in strong) and len(strong) < len(rows)
    rare = neighbours(world, "vellmoor", max_df=1, lang="en", limit=100)
    assert all(r["doc_freq"] <= 1 for r in rare) and len(rare) < len(rows)
    by_count = neighbours(world, "vellmoor", order="count", lang="en", limit=100)
    assert [r["chunk_count"] for r in by_count] == sorted((r["chunk_count"] for r in by_count), reverse=True)


def test_ego_subgraph(world) -> None:
    one = ego_subgraph(world, "vellmoor", radius=1, limit=10)
    assert isinstance(one, nx.Graph) and "vellmoor" in one
    assert 2 <= one.number_of_nodes() <= 11
    assert all(one.has_edge("vellmoor", n) for n in one.nodes if n != "vellmoor")
    assert one.nodes["vellmoor"]["label"] and one.edges[next(iter(one.edges))]["chunk_count"] >= 1
    two = ego_subgraph(world, "vellmoor", radius=2, limit=10)
    assert set(one.nodes) <= set(two.nodes) and two.number_of_nodes() > one.number_of_nodes()
    assert ego_subgraph(world, "no such key").number_of_nodes() == 0


def test_entity_command(world) -> None:
    from factory.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["entity", "Заречинске", "--store", str(world.root), "--lang", "ru"])
    assert result.exit_code == 0, result.output
    assert "заречинск" in result.output and "aliases:" in result.output and "neighbours" in result.output
    result = runner.invoke(app, ["entity", "Velmoor", "--store", str(world.root)])
    assert result.exit_code != 0
    assert "did you mean" in str(result.exception) and "Vellmoor" in str(result.exception)


def test_entity_summary_report(world) -> None:
    from rich.console import Console

    from factory.graph.report import print_entity_summary, top_entities, top_pairs

    console = Console(record=True, width=160)
    print_entity_summary(world, console)
    text = console.export_text()
    assert "Entities per label" in text and "Top 20 named entities (ru" in text and "Top co-occurring pairs (en" in text
    assert top_entities(world, 5, "en")[0]["doc_freq"] >= top_entities(world, 5, "en")[-1]["doc_freq"]
    pairs = top_pairs(world, 5, "en")
    assert len(pairs) == 5 and all(p["name_a"] and p["name_b"] for p in pairs)
    assert [p["chunk_count"] for p in pairs] == sorted((p["chunk_count"] for p in pairs), reverse=True)
