"""Store basics: migrations recorded, keys (first/last), compaction keeps rows, schema segments."""

from __future__ import annotations

import pytest

from factory.store import Store
from factory.store.schema import latest_version, migrations, table_specs
from factory.store.store import StoreError


def test_migrations_are_recorded_once(store):
    rows = store.query("SELECT number, name, checksum FROM _migrations ORDER BY number")
    assert [r["number"] for r in rows] == [m.number for m in migrations()]
    assert [(r["name"], r["checksum"]) for r in rows] == [(m.name, m.checksum) for m in migrations()]
    assert Store(store.root).migrate() == []  # reopening applies nothing
    assert store.scalar("SELECT count(*) FROM _migrations") == len(migrations())


def test_schema_segments_exist_for_every_table(store):
    for name in table_specs():
        files = list(store.table_dir(name).glob("_schema-*.parquet"))
        assert [f.name for f in files] == [f"_schema-{latest_version():03d}.parquet"], name
        assert store.scalar(f'SELECT count(*) FROM "{name}"') == 0  # empty tables are queryable


def test_keys_first_and_last(store):
    store.append("runs", [{"run_id": "r1", "command": "first"}])
    store.append("runs", [{"run_id": "r1", "command": "second"}, {"run_id": "r2", "command": "other"}])
    assert store.query("SELECT run_id, command FROM runs ORDER BY run_id") == [
        {"run_id": "r1", "command": "first"}, {"run_id": "r2", "command": "other"}
    ]
    store.append("documents", [{"doc_id": "d", "title": "old", "meta": {"a": 1}}])
    store.append("documents", [{"doc_id": "d", "title": "new", "meta": {"a": 2}}])
    assert store.query("SELECT title, meta->>'a' AS a FROM documents") == [{"title": "new", "a": "2"}]
    assert store.scalar("SELECT count(*) FROM documents__segments") == 2
    # within one writer the later row of the same key wins as well
    with store.writer("w") as writer:
        writer.append("documents", [{"doc_id": "e", "title": "one"}, {"doc_id": "e", "title": "two"}])
    assert store.scalar("SELECT title FROM documents WHERE doc_id = 'e'") == "two"


def test_compaction_keeps_rows(store):
    for i in range(5):
        store.append("chunks", [{"chunk_id": f"c{i}_{j}", "doc_id": f"c{i}", "n": j, "text": "t"} for j in range(3)])
    store.append("chunks", [{"chunk_id": "c0_0", "doc_id": "c0", "n": 0, "text": "newer"}])
    before = store.query("SELECT chunk_id, text FROM chunks ORDER BY chunk_id")
    assert len(store.segments("chunks")) == 6
    assert store.compact("chunks") == 6
    assert len(store.segments("chunks")) == 1
    assert store.query("SELECT chunk_id, text FROM chunks ORDER BY chunk_id") == before
    assert store.scalar("SELECT text FROM chunks WHERE chunk_id = 'c0_0'") == "newer"
    assert store.compact("chunks") == 0


def test_bad_writes_are_refused(store, tmp_path):
    with pytest.raises(StoreError, match="unknown table 'nope'"):
        store.append("nope", [{"a": 1}])
    with pytest.raises(StoreError, match="no column"):
        store.append("documents", [{"doc_id": "x", "colour": "red"}])
    with pytest.raises(StoreError, match="no store here"):
        Store(tmp_path / "absent", create=False)



def test_a_migration_that_lands_after_a_higher_one_is_applied(tmp_path, monkeypatch):
    import factory.store.schema as schema
    import factory.store.store as store_module

    everything = schema.migrations()
    late = everything[-2]  # numbers are handed out per change: a lower one can land last

    def known(found: tuple) -> None:
        monkeypatch.setattr(schema, "migrations", lambda: found)
        monkeypatch.setattr(store_module, "migrations", lambda: found)
        schema.table_specs.cache_clear()

    try:
        known(tuple(m for m in everything if m is not late))
        first = Store(tmp_path / "s")
        first.append("runs", [{"run_id": "r1", "command": "before"}])
        assert late.number not in first.applied_migrations()
        known(everything)
        again = Store(first.root)
        assert again.applied_migrations() == [m.number for m in everything]
        assert again.scalar("SELECT command FROM runs") == "before"
        assert again.migrate() == []
    finally:
        schema.table_specs.cache_clear()


def test_a_query_makes_only_the_views_it_needs_and_reads_the_same(store):
    from factory.store.store import views_for

    store.append("candidates", [{"candidate_id": "c1", "run_id": "r", "status": "accepted"}])
    store.append("chunks", [{"chunk_id": "d_0", "doc_id": "d", "n": 0, "text": "kept"}])
    statements = store.view_sql()
    made = views_for("SELECT * FROM candidates WHERE run_id = ?", statements)
    assert [s.split(" AS ")[0].split()[-1].strip('"') for s in made] == [
        "candidates__segments", "candidates__latest", "candidates"]
    # a view built on others brings them along, in migration order (chunks is defined twice)
    assert len(views_for("SELECT * FROM chunks", statements)) > 3
    for sql in ("SELECT candidate_id, status FROM candidates", "SELECT chunk_id FROM chunks",
                "SELECT * FROM run_outcomes", "SELECT count(*) AS n FROM funnel"):
        full = store.connect()
        try:
            expected = full.execute(sql).fetchall()
        finally:
            full.close()
        assert [tuple(r.values()) for r in store.query(sql)] == expected
