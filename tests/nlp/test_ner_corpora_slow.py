"""NER over a few hundred chunks of each shared corpus, with worker processes (slow)."""

from __future__ import annotations

from collections import Counter

import pytest
from nlp_helpers import paragraph_chunks

from factory.graph.stats import compute_statistics
from factory.nlp.pipeline import MIN_CHUNKS_FOR_WORKERS, annotate_batch, annotate_chunks
from factory.settings import Settings

CASES = {
    "en": ("en-wiki-vital", 460, {"united states", "china", "india", "europe"}),
    "ru": ("ru-wikinews", 100, {"россия", "москва", "сша"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(CASES))
def test_shared_corpus_sample(lang: str, store, shared_corpora) -> None:
    name, n_docs, expected_top = CASES[lang]
    rows = paragraph_chunks(shared_corpora / name / "docs.jsonl", lang, limit=n_docs)
    assert len(rows) >= MIN_CHUNKS_FOR_WORKERS  # so that the worker processes really run
    store.append("chunks", rows)
    settings = Settings(nlp={"n_process": 2, "batch_size": 32})
    written = annotate_chunks(store, lang, settings, "slow", progress=False)
    assert store.scalar("SELECT count(*) FROM annotated_chunks") == len(rows)
    assert written >= 2 * len(rows)

    # the worker path gives exactly what one process gives
    sample = rows[:40]
    single = annotate_batch(lang, [(r["text"], {"chunk_id": r["chunk_id"]}) for r in sample], 16)
    expected = sorted((ctx["chunk_id"], m["start"], m["end"], m["entity_key"]) for ctx, ms, _ in single for m in ms)
    ids = [r["chunk_id"] for r in sample]
    stored = store.query(
        'SELECT chunk_id, start, "end", entity_key FROM mentions WHERE chunk_id IN (SELECT unnest(?::VARCHAR[]))',
        [ids],
    )
    assert sorted((r["chunk_id"], r["start"], r["end"], r["entity_key"]) for r in stored) == expected

    labels = Counter(r["label"] for r in store.query("SELECT label FROM mentions"))
    for label in ("person", "organization", "location", "date", "number"):
        assert labels[label] >= 0.03 * written, (label, labels)

    summary = compute_statistics(store, "slow")
    assert summary["n_mentions"] == written and summary["n_pairs"] > 3 * len(rows)
    top = {r["entity_key"] for r in store.query(
        "SELECT entity_key FROM current_entities WHERE label NOT IN ('date', 'number') "
        "ORDER BY doc_freq DESC, entity_key LIMIT 15")}
    assert top & expected_top, top
    assert store.scalar("SELECT count(*) FROM current_pairs WHERE npmi < -1 - 1e-9 OR npmi > 1 + 1e-9") == 0
