"""MinHash LSH near-duplicates: found when near, not when unrelated, pointing at the earlier item."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from factory.corpus.dedup import DedupIndex, Sketcher, document_sketch, find_near_duplicates, shingles

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _texts() -> list[str]:
    return [json.loads(line)["text"] for line in (FIXTURES / "corpus_en.jsonl").read_text(encoding="utf-8").splitlines()]


def test_near_copies_are_found_and_unrelated_texts_are_not():
    texts = _texts()
    edited = texts[0].replace("market town", "market city", 1)
    items = [(f"d{i}", t) for i, t in enumerate(texts)] + [("copy", texts[3]), ("edit", edited)]
    found = find_near_duplicates(items, threshold=0.8, num_perm=128)
    by_id = {d.item_id: d for d in found}
    assert set(by_id) == {"copy", "edit"}
    assert by_id["copy"].duplicate_of == "d3" and by_id["copy"].jaccard == 1.0
    assert by_id["edit"].duplicate_of == "d0" and 0.8 <= by_id["edit"].jaccard < 1.0


def test_threshold_decides():
    text = _texts()[1]
    words = text.split()
    half_changed = " ".join(words[: len(words) // 2] + [w.upper() + "x" for w in words[len(words) // 2 :]])
    assert find_near_duplicates([("a", text), ("b", half_changed)], threshold=0.85) == []
    assert find_near_duplicates([("a", text), ("b", half_changed)], threshold=0.2, num_perm=128)


def test_sketches_are_deterministic_and_documents_are_unions():
    first, second = Sketcher(64), Sketcher(64)
    text = _texts()[2]
    assert np.array_equal(first.sketch(text), second.sketch(text))
    a, b = "one two three four five", "six seven eight nine ten"
    union = document_sketch([first.sketch(a), first.sketch(b)], first)
    sketch = first.minhash(first.empty())
    sketch.update_batch(shingles(a) | shingles(b))
    assert np.array_equal(union, sketch.hashvalues)


def test_index_prefers_the_most_similar_earlier_item_and_skips_empty_text():
    sketcher = Sketcher(128)
    index = DedupIndex(sketcher, 0.5, "chunk")
    base = " ".join(f"w{i}" for i in range(60))
    index.add("far", sketcher.sketch(base + " " + " ".join(f"x{i}" for i in range(30))))
    index.add("near", sketcher.sketch(base + " y1"))
    found = index.add("query", sketcher.sketch(base))
    assert found is not None and found.duplicate_of == "near"
    assert index.add("empty", sketcher.sketch("")) is None
    assert index.add("empty2", sketcher.sketch("  ")) is None
    assert shingles("") == set() and shingles("Just two") == {b"just two"}
