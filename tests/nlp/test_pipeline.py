"""annotate_chunks: writes mentions, aliases and seen-markers; skips what it saw; follows changes."""

from __future__ import annotations

from nlp_helpers import chunk_row

from factory.nlp.pipeline import annotate_chunks
from factory.settings import Settings


def _settings() -> Settings:
    return Settings(nlp={"n_process": 1, "batch_size": 16})


def test_annotate_fixture_corpora(store, fixture_chunks) -> None:
    for lang in ("en", "ru"):
        rows = fixture_chunks(lang)
        store.append("chunks", rows)
        written = annotate_chunks(store, lang, _settings(), f"run-{lang}", progress=False)
        assert written == store.scalar(
            "SELECT count(*) FROM mentions m JOIN chunks c USING (chunk_id) WHERE c.lang = ?", [lang]
        )
        assert written > 10 * len(rows)
        seen = store.scalar("SELECT count(*) FROM annotated_chunks WHERE lang = ?", [lang])
        assert seen == len(rows)
    # mention offsets index the chunk text exactly
    bad = store.query(
        "SELECT m.chunk_id, m.text FROM mentions m JOIN chunks c USING (chunk_id) "
        "WHERE substr(c.text, m.start + 1, m.\"end\" - m.start) <> m.text"
    )
    assert bad == []
    # inflected Russian forms are one key; the acronym links are stored
    forms = store.query(
        "SELECT list(DISTINCT text ORDER BY text) AS forms FROM mentions WHERE entity_key = 'заречинск'"
    )[0]["forms"]
    assert {"Заречинск", "Заречинска", "Заречинске"} <= set(forms)
    aliases = {(r["entity_key"], r["alias_key"]) for r in store.query("SELECT * FROM entity_aliases")}
    assert ("заречинский стекольный завод", "зсз") in aliases
    assert ("northern cartographic society", "ncs") in aliases


def test_rerun_adds_nothing_and_changed_chunks_are_annotated_again(store) -> None:
    rows = [chunk_row("d1", 0, "Ivan Petrov moved to Paris in 1998.", "en"),
            chunk_row("d1", 1, "Nothing to see here.", "en"),
            chunk_row("d2", 0, "Maria Lopez lives in Madrid.", "en")]
    store.append("chunks", rows)
    first = annotate_chunks(store, "en", _settings(), "r1", progress=False)
    assert first >= 4
    assert annotate_chunks(store, "en", _settings(), "r2", progress=False) == 0
    # the chunk without entities was seen, not forgotten
    assert store.scalar("SELECT n_mentions FROM annotated_chunks WHERE chunk_id = 'd1_1'") == 0
    # a changed chunk is annotated again; only its new version counts in current_mentions
    store.append("chunks", [chunk_row("d2", 0, "Maria Lopez moved from Madrid to Berlin in 2005.", "en")])
    again = annotate_chunks(store, "en", _settings(), "r3", progress=False)
    assert again >= 3
    current = {r["text"] for r in store.query("SELECT text FROM current_mentions WHERE chunk_id = 'd2_0'")}
    assert {"Maria Lopez", "Madrid", "Berlin", "2005"} <= current
    assert store.scalar("SELECT count(DISTINCT content_hash) FROM mentions WHERE chunk_id = 'd2_0'") == 2


def test_chunk_ids_limit_the_work_and_other_languages_are_left_alone(store) -> None:
    store.append("chunks", [
        chunk_row("a", 0, "Ivan Petrov moved to Paris in 1998.", "en"),
        chunk_row("b", 0, "Maria Lopez lives in Madrid.", "en"),
        chunk_row("c", 0, "Иван Петров переехал в Париж в 1998 году.", "ru"),
    ])
    annotate_chunks(store, "en", _settings(), "r1", chunk_ids=["b_0", "c_0", "missing"], progress=False)
    seen = {r["chunk_id"] for r in store.query("SELECT chunk_id FROM annotated_chunks")}
    assert seen == {"b_0"}
    annotate_chunks(store, "ru", _settings(), "r2", progress=False)
    keys = {r["entity_key"] for r in store.query("SELECT entity_key FROM mentions WHERE chunk_id = 'c_0'")}
    assert {"иван петров", "париж", "1998"} <= keys
