"""`factory compose` end to end on a tiny annotated store with the `fake` backend."""

from __future__ import annotations

import hashlib
import json

from typer.testing import CliRunner

from factory.cli import app

DOCS = [
    ("a", "Edmund Carrow was born in Dunmere and founded the Ashkel Ironworks.",
     [("Edmund Carrow", "person"), ("Dunmere", "location"), ("Ashkel Ironworks", "organization")]),
    ("b", "The Ashkel Ironworks was renamed Carrow Steel in 1919 under Ada Brisk.",
     [("Ashkel Ironworks", "organization"), ("Carrow Steel", "organization"), ("1919", "date"),
      ("Ada Brisk", "person")]),
    ("c", "Ada Brisk ran the Harbour Trust in Vellmoor from 1925.",
     [("Ada Brisk", "person"), ("Harbour Trust", "organization"), ("Vellmoor", "location"), ("1925", "date")]),
    ("d", "Dunmere lies on the River Ashkel, downstream of Vellmoor.",
     [("Dunmere", "location"), ("River Ashkel", "location"), ("Vellmoor", "location")]),
]


def _write(store) -> None:
    chunks, mentions = [], []
    for doc, text, ents in DOCS:
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunks.append({"chunk_id": f"{doc}_0", "doc_id": doc, "n": 0, "lang": "en", "title": doc, "text": text,
                       "content_hash": digest})
        for surface, label in ents:
            pos = text.index(surface)
            mentions.append({"chunk_id": f"{doc}_0", "doc_id": doc, "start": pos, "end": pos + len(surface),
                             "text": surface, "label": label, "entity_key": surface.casefold(),
                             "content_hash": digest})
    store.append("chunks", chunks)
    store.append("mentions", mentions)


def test_compose_prints_drafts(store):
    _write(store)
    result = CliRunner().invoke(app, ["compose", "--store", str(store.root), "--llm", "fake", "--n", "2",
                                      "--cell", "chain/direct/person", "--lang", "en", "--json"])
    assert result.exit_code == 0, result.output
    assert "2 of 2 candidates gave a parsed draft" in result.output
    first = json.loads(result.output[: result.output.index("\n}\n") + 2])
    assert first["cell"] == "chain/direct/person" and first["draft"]["question"]
    assert len(first["subgraph"]["chunk_ids"]) == 2
    # the calls were logged by the gateway into the store
    stages = {r["stage"] for r in store.query("SELECT stage FROM llm_calls")}
    assert {"facts", "compose"} <= stages


def test_compose_explains_an_unsatisfiable_cell(store):
    _write(store)
    result = CliRunner().invoke(app, ["compose", "--store", str(store.root), "--llm", "fake", "--n", "1",
                                      "--cell", "intersection/direct/work", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "stopped at select" in result.output and "0 of 1" in result.output


def test_compose_rejects_a_bad_cell(store):
    _write(store)
    result = CliRunner().invoke(app, ["compose", "--store", str(store.root), "--llm", "fake", "--cell", "calculation/direct/person"])
    assert result.exit_code != 0
    assert "compatibility" in str(result.exception) or "compatibility" in result.output


def test_panels_show_bracketed_chunk_ids(store):
    _write(store)
    result = CliRunner().invoke(app, ["compose", "--store", str(store.root), "--llm", "fake", "--n", "1",
                                      "--cell", "chain/direct/person", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "[a_0]" in result.output or "[b_0]" in result.output or "[c_0]" in result.output or "[d_0]" in result.output


def test_compose_with_an_index_tells_the_composer_the_search_words(store, tmp_path):
    from factory.index.fixed import build_index

    _write(store)
    build_index(store, tmp_path / "index", "en", dense=None, progress=False)
    result = CliRunner().invoke(app, ["compose", "--store", str(store.root), "--index", str(tmp_path / "index"),
                                      "--llm", "fake", "--n", "1", "--cell", "chain/direct/person", "--lang", "en"])
    assert result.exit_code == 0, result.output
    prompts = [str(r["request"]) for r in store.query("SELECT request FROM llm_calls WHERE stage = 'compose'")]
    assert prompts and all("Words a search engine finds P2 by (the question may use at most 3" in p for p in prompts)
