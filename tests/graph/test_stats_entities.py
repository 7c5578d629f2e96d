"""compute_statistics on a tiny hand-made mention set: counts, NPMI, folding, generations."""

from __future__ import annotations

import math

import pytest

from factory.graph.stats import compute_statistics

# chunk -> (doc, [(entity_key, surface, label), ...]); every chunk is annotated
CHUNKS = {
    "c1": ("d1", [("alpha", "Alpha", "location"), ("alpha", "Alpha", "location"), ("beta", "Beta", "person"),
                  ("gamma", "Gamma", "organization")]),
    "c2": ("d1", [("alpha", "ALPHA", "organization"), ("beta", "Beta", "person")]),
    "c3": ("d2", [("alpha", "Alpha", "location"), ("delta", "Delta", "location")]),
    "c4": ("d2", []),
    "c5": ("d3", [("beta", "Beta", "person"), ("gamma", "Gamma", "organization"), ("al", "AL", "organization")]),
    "c6": ("d4", [("barack obama", "Barack Obama", "person")]),
    "c7": ("d4", [("obama", "Obama", "person")]),
    "c8": ("d5", [("obama", "Obama", "person")]),
    "c9": ("d6", [("john smith", "John Smith", "person"), ("jane smith", "Jane Smith", "person"),
                  ("smith", "Smith", "person")]),
    # initials: "B. Obama" is the one Barack Obama; "J. Smith" could be John or Jane
    "c10": ("d7", [("b obama", "B. Obama", "person"), ("j smith", "J. Smith", "person")]),
}
N = len(CHUNKS)


def _hash(chunk_id: str) -> str:
    return f"h-{chunk_id}"


@pytest.fixture()
def tiny(store):
    store.append("chunks", [
        {"chunk_id": c, "doc_id": d, "n": 0, "lang": "en", "title": d, "text": "…", "content_hash": _hash(c),
         "n_tokens": 1, "char_start": 0, "char_end": 1, "run_id": "t"}
        for c, (d, _) in CHUNKS.items()
    ])
    mentions = []
    for c, (d, items) in CHUNKS.items():
        for i, (key, text, label) in enumerate(items):
            mentions.append({"chunk_id": c, "doc_id": d, "start": i * 10, "end": i * 10 + 5, "text": text,
                             "label": label, "ner_label": "X", "entity_key": key, "content_hash": _hash(c),
                             "run_id": "t"})
    # a mention from an older version of c2: must not count
    mentions.append({"chunk_id": "c2", "doc_id": "d1", "start": 0, "end": 3, "text": "Eps", "label": "person",
                     "ner_label": "X", "entity_key": "epsilon", "content_hash": "old", "run_id": "t"})
    store.append("mentions", mentions)
    store.append("annotated_chunks", [
        {"chunk_id": c, "content_hash": _hash(c), "lang": "en", "n_mentions": len(items), "run_id": "t"}
        for c, (_, items) in CHUNKS.items()
    ])
    store.append("entity_aliases", [
        {"entity_key": "alpha", "alias_key": "al", "alias": "AL", "evidence_chunk_id": "c5",
         "rule": "acronym", "content_hash": _hash("c5"), "run_id": "t"},
        # evidence from a chunk version that no longer exists: ignored
        {"entity_key": "beta", "alias_key": "delta", "alias": "Delta", "evidence_chunk_id": "c3",
         "rule": "aka", "content_hash": "old", "run_id": "t"},
    ])
    return store


def _npmi(ab: int, a: int, b: int, n: int = N) -> float:
    p_ab, p_a, p_b = ab / n, a / n, b / n
    return math.log(p_ab / (p_a * p_b)) / -math.log(p_ab)


def test_entity_counts(tiny) -> None:
    summary = compute_statistics(tiny, "run-1")
    ents = {r["entity_key"]: r for r in tiny.query("SELECT * FROM current_entities")}
    # "al" is folded into alpha; epsilon (stale version) is gone
    assert "al" not in ents and "epsilon" not in ents
    alpha = ents["alpha"]
    assert (alpha["mention_count"], alpha["chunk_freq"], alpha["doc_freq"]) == (5, 4, 3)
    assert alpha["label"] == "location"  # 3 location mentions against 2 organization
    assert alpha["name"] == "Alpha" and {"Alpha", "ALPHA", "AL"} <= set(alpha["aliases"])
    assert alpha["aliases"][0] == "Alpha"
    assert (ents["beta"]["mention_count"], ents["beta"]["chunk_freq"], ents["beta"]["doc_freq"]) == (3, 3, 2)
    assert (ents["gamma"]["chunk_freq"], ents["gamma"]["doc_freq"]) == (2, 2)
    assert (ents["delta"]["chunk_freq"], ents["delta"]["doc_freq"]) == (1, 1)
    # person identity: "Obama" is the corpus's one full Obama (they meet in d4), also in d5;
    # "Smith" next to two Smiths stays apart
    assert (ents["barack obama"]["mention_count"], ents["barack obama"]["chunk_freq"]) == (4, 4)
    assert "b obama" not in ents and "obama" not in ents and ents["j smith"]["mention_count"] == 1
    assert ents["smith"]["mention_count"] == 1
    assert summary["n_chunks"] == N and summary["n_entities"] == len(ents) == 9
    assert summary["n_mentions"] == 19


def test_pair_counts_and_npmi(tiny) -> None:
    compute_statistics(tiny, "run-1")
    pairs = {(r["key_a"], r["key_b"]): r for r in tiny.query("SELECT * FROM current_pairs")}
    expected = {  # (chunks together, documents together, NPMI by hand)
        ("alpha", "beta"): (3, 2, math.log((3 / 10) / ((4 / 10) * (3 / 10))) / -math.log(3 / 10)),
        ("alpha", "gamma"): (2, 2, math.log((2 / 10) / ((4 / 10) * (2 / 10))) / -math.log(2 / 10)),
        ("alpha", "delta"): (1, 1, math.log((1 / 10) / ((4 / 10) * (1 / 10))) / -math.log(1 / 10)),
        ("beta", "gamma"): (2, 2, math.log((2 / 10) / ((3 / 10) * (2 / 10))) / -math.log(2 / 10)),
        # chunk frequencies 4 (Barack Obama, c6 c7 c8 c10) and 1 (J. Smith): log(1/10 / (4/10 * 1/10)) / log(10)
        ("barack obama", "j smith"): (1, 1, math.log((1 / 10) / ((4 / 10) * (1 / 10))) / -math.log(1 / 10)),
        ("jane smith", "john smith"): (1, 1, 1.0),
        ("jane smith", "smith"): (1, 1, 1.0),
        ("john smith", "smith"): (1, 1, 1.0),
    }
    assert set(pairs) == set(expected)
    for key, (count, docs, npmi) in expected.items():
        row = pairs[key]
        assert (row["chunk_count"], row["doc_count"]) == (count, docs), key
        assert row["npmi"] == pytest.approx(npmi, abs=1e-12), key
        assert row["npmi"] == pytest.approx(_npmi(count, row["chunk_freq_a"], row["chunk_freq_b"]))
    # every pair is stored in both orientations for lookups by either key
    edges = tiny.query("SELECT key_a, key_b, npmi FROM current_edges WHERE key_a = 'beta' ORDER BY key_b")
    assert [(r["key_b"]) for r in edges] == ["alpha", "gamma"]
    assert tiny.scalar("SELECT count(*) FROM current_edges") == 2 * len(expected)
    labels = tiny.query("SELECT label_a, label_b FROM current_pairs WHERE key_a = 'alpha' AND key_b = 'beta'")[0]
    assert labels == {"label_a": "location", "label_b": "person"}


def test_chunk_entities(tiny) -> None:
    compute_statistics(tiny, "run-1")
    rows = tiny.query("SELECT chunk_id, n_mentions FROM current_chunk_entities WHERE entity_key = 'alpha' ORDER BY chunk_id")
    assert [(r["chunk_id"], r["n_mentions"]) for r in rows] == [("c1", 2), ("c2", 1), ("c3", 1), ("c5", 1)]


def test_generations_switch_and_old_ones_are_pruned(tiny) -> None:
    first = compute_statistics(tiny, "run-1")["generation"]
    # a new chunk version of c3 drops delta; the next generation no longer has it
    tiny.append("chunks", [{"chunk_id": "c3", "doc_id": "d2", "n": 0, "lang": "en", "title": "d2", "text": "…",
                            "content_hash": "h-c3-v2", "n_tokens": 1, "char_start": 0, "char_end": 1, "run_id": "t"}])
    tiny.append("annotated_chunks", [{"chunk_id": "c3", "content_hash": "h-c3-v2", "lang": "en", "n_mentions": 0,
                                      "run_id": "t"}])
    second = compute_statistics(tiny, "run-2")["generation"]
    assert second != first
    assert tiny.scalar("SELECT generation FROM current_generation") == second
    assert tiny.scalar("SELECT count(*) FROM current_entities WHERE entity_key = 'delta'") == 0
    assert tiny.scalar("SELECT chunk_freq FROM current_entities WHERE entity_key = 'alpha'") == 3
    # the older generation is still readable by name until pruned
    assert tiny.scalar("SELECT count(*) FROM entities WHERE generation = ? AND entity_key = 'delta'", [first]) == 1
    compute_statistics(tiny, "run-3")
    for table in ("entities", "entity_pairs", "chunk_entities"):
        assert len(list(tiny.table_dir(table).glob("stats-g*.parquet"))) == 2
    assert tiny.scalar("SELECT count(*) FROM entities WHERE generation = ?", [first]) == 0


def test_empty_store(store) -> None:
    summary = compute_statistics(store, "run-0")
    assert summary["n_entities"] == 0 and summary["n_pairs"] == 0
    assert store.scalar("SELECT count(*) FROM current_entities") == 0
