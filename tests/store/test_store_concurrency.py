"""Issue 2 acceptance: several writer processes and a reader at once; an open interactive session stalls nothing."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb

from factory.store import Store

ROWS_PER_WRITER = 3000
ROWS_PER_SEGMENT = 60


def _writer(root: str, name: str, barrier) -> None:
    store = Store(root)
    barrier.wait(timeout=120)
    with store.writer(name, flush_rows=ROWS_PER_SEGMENT) as writer:
        for i in range(ROWS_PER_WRITER):
            writer.append("documents", [{
                "doc_id": f"{name}-{i:05d}", "lang": "en", "title": f"T{i}", "source": name,
                "doc_hash": f"{i:016x}", "n_chars": i, "n_chunks": 1, "meta": {"i": i}, "run_id": name,
            }])
            if i % ROWS_PER_SEGMENT == 0:
                time.sleep(0.02)  # spread the work (>= 1 s) so the reader sees it half done


def _reader(root: str, barrier, done, results) -> None:
    store = Store(root)
    barrier.wait(timeout=120)
    counts: list[tuple[int, int]] = []
    errors: list[str] = []
    finishing = False
    while True:
        finishing = done.is_set()
        try:
            row = store.query("SELECT count(*) AS n, count(DISTINCT doc_id) AS d FROM documents")[0]
            counts.append((row["n"], row["d"]))
        except Exception as exc:  # any error is a failure of the design under test
            errors.append(repr(exc))
        if finishing:
            break
    results.put({"counts": counts, "errors": errors})


def test_two_writers_and_a_reader_at_once(tmp_path):
    root = str(tmp_path / "store")
    Store(root)  # migrate once up front
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    done = ctx.Event()
    results = ctx.Queue()
    writers = [ctx.Process(target=_writer, args=(root, f"w{k}", barrier)) for k in (1, 2)]
    reader = ctx.Process(target=_reader, args=(root, barrier, done, results))
    for process in (*writers, reader):
        process.start()
    for process in writers:
        process.join(timeout=300)
        assert process.exitcode == 0
    done.set()
    outcome = results.get(timeout=120)
    reader.join(timeout=60)
    assert reader.exitcode == 0

    assert outcome["errors"] == []
    print(f"reader looked {len(outcome['counts'])} times")
    counts = [n for n, _ in outcome["counts"]]
    total = 2 * ROWS_PER_WRITER
    assert all(n == d for n, d in outcome["counts"])  # no row seen twice
    assert counts == sorted(counts)  # never decreases
    assert counts[-1] == total  # the reader's last look, after both writers finished
    assert any(0 < n < total for n in counts), counts[:20]  # it really read during the writes
    # exact, no duplicates, every segment whole
    store = Store(root)
    assert store.scalar("SELECT count(*) FROM documents__segments") == total
    assert store.scalar("SELECT count(DISTINCT doc_id) FROM documents") == total
    assert len(store.segments("documents")) == 2 * (ROWS_PER_WRITER // ROWS_PER_SEGMENT)
    assert not list((Path(root) / "tmp").iterdir())


WRITER_SCRIPT = textwrap.dedent("""
    import sys, time
    from factory.store import Store
    started = time.perf_counter()
    store = Store(sys.argv[1])
    store.append("ingest_errors", [{"source": "s.jsonl", "line": i, "doc_id": None, "error": "x", "run_id": "r"} for i in range(500)])
    print(round(time.perf_counter() - started, 3))
    print(store.refresh_catalog(quiet=True))  # refused politely while the session holds the file
""")


def test_open_interactive_session_on_the_catalog_stalls_no_writer(tmp_path):
    store = Store(tmp_path / "store")
    store.refresh_catalog()
    # an interactive `duckdb catalog.duckdb` session: read-write, holding the file lock
    session = duckdb.connect(str(store.catalog_path))
    try:
        assert session.execute("SELECT count(*) FROM ingest_errors").fetchone() == (0,)
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-c", WRITER_SCRIPT, str(store.root)], capture_output=True, text=True, timeout=120
        )
        elapsed = time.perf_counter() - started
        assert result.returncode == 0, result.stderr
        seconds, refreshed = result.stdout.split()
        assert float(seconds) < 10  # the store work itself, interpreter start aside
        assert refreshed == "False"
        assert elapsed < 60
        assert store.query("SELECT count(*) AS n FROM ingest_errors") == [{"n": 500}]
        # the session's views read the segment folders: it sees the new rows too
        assert session.execute("SELECT count(*) FROM ingest_errors").fetchone() == (500,)
    finally:
        session.close()
    assert store.refresh_catalog(quiet=True) is True
