"""Quotes and SQL in ids, names, filters and paths: through ingest (document ids and titles),
``store.query`` parameters, `factory rejected`, `funnel`, `entity`, `search`, `stats`, the
benchmark export and `factory eval`. Each finds exactly what it should (nothing for a
filter that only matches as injected SQL), nothing fails, and every table is intact."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.errors import FactoryError
from factory.store import Store

from reliability_kit import SQL_IDS

SQL_FILTERS = ["y' OR '1'='1", "'; DROP TABLE verdicts; --", "shortcut' --", '" OR ""="', "%", "_"]  # no id or name is one of these
TABLES = ["documents", "chunks", "entities", "candidates", "drafts", "verdicts", "tasks", "llm_calls", "runs"]
QUOTED_DIR = "bench 'x'; DROP TABLE tasks; -- \"q\""


def _counts(store: Store) -> dict[str, int]:
    return {t: store.scalar(f'SELECT count(*) FROM "{t}"') for t in TABLES}  # our own table names


def _scores(metrics: dict) -> dict:
    """metrics.json without what differs between two folders: where the run file is, how long it took."""
    return {name: {k: v for k, v in m.items() if k not in ("run_file", "elapsed_s")} for name, m in metrics.items()}


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    # a failure may only be a FactoryError (`factory` prints it as one line and exits 1)
    assert result.exception is None or isinstance(result.exception, (SystemExit, FactoryError)), result.exception
    return result.exit_code, result.output if result.exception is None or isinstance(result.exception, SystemExit) \
        else str(result.exception)


@pytest.mark.slow  # shares the hostile world (NER ingest and a generation run) with test_hostile_text
def test_quotes_and_sql_in_ids_filters_and_paths(hostile_world: dict, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # Rich wraps at the terminal width; keep each message on one line
    store_path, index = hostile_world["store"], hostile_world["index"]
    store = Store(store_path)
    before = _counts(store)
    assert before["tasks"] >= 1 and before["candidates"] > before["tasks"]

    # ingest kept the SQL ids and titles as data; a parameter matches one row, never all
    for doc_id in SQL_IDS:
        rows = store.query("SELECT doc_id, title FROM documents WHERE doc_id = ?", [doc_id])
        assert [r["doc_id"] for r in rows] == [doc_id] and "DROP TABLE documents" in rows[0]["title"]
        chunks = store.query("SELECT chunk_id FROM chunks WHERE doc_id = ?", [doc_id])
        assert chunks and all(c["chunk_id"].startswith(doc_id + "_") for c in chunks)
    assert store.scalar("SELECT count(*) FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))",
                        [SQL_IDS]) == len(SQL_IDS)
    for value in SQL_FILTERS:
        assert store.query("SELECT doc_id FROM documents WHERE doc_id = ? OR title = ?", [value, value]) == []

    # the store also lives at a path full of quotes
    quoted_store = tmp_path / "o'brien's store; DROP TABLE tasks; --"
    shutil.copytree(store_path, quoted_store)
    assert _counts(Store(quoted_store)) == before

    # `factory rejected` / `funnel`: an injected filter matches nothing, a real one what it should
    validator = store.query("SELECT validator, count(*) AS n FROM rejected_tasks WHERE validator IS NOT NULL "
                            "GROUP BY validator ORDER BY n DESC, validator LIMIT 1")[0]
    code, out = _cli("rejected", "--store", store_path, "--validator", validator["validator"], "--json",
                     "--limit", "1000")
    assert code == 0 and len([line for line in out.splitlines() if line.startswith("{")]) == validator["n"]
    for value in SQL_FILTERS:
        code, out = _cli("rejected", "--store", store_path, "--validator", value, "--json")
        assert code == 0 and out.strip() == "", out
        code, out = _cli("rejected", "--store", store_path, "--run-id", value, "--json")
        assert code == 0 and out.strip() == "", out
        code, out = _cli("funnel", "--store", store_path, "--run-id", value, "--json")
        assert code == 0 and json.loads(out)["candidates"] == 0
    code, out = _cli("rejected", "--store", store_path, "--validator", "y' OR '1'='1")  # the human view
    assert code == 0 and "no rejected candidates for y' OR '1'='1" in out

    # `factory entity`: a name with a quote is found; SQL or markup as a name is one clean error line
    code, out = _cli("entity", "Maeve O'Brien", "--store", store_path)
    assert code == 0 and "Maeve O'Brien" in out and "maeve o brien" in out
    for name in ["'; DROP TABLE verdicts; --", "qq' OR 'zz'='zz", "[/]", "[bold]qqq"]:  # keys match no entity
        code, out = _cli("entity", name, "--store", store_path)
        assert code == 1 and out.startswith(f"no entity {name!r} in "), out
    # as the console script prints it: one line, the name as given (as Rich markup, '[/]' raised)
    shown = subprocess.run([sys.executable, "-m", "factory.cli", "entity", "[/] [bold]x", "--store", str(store_path)],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, COLUMNS="400"))
    assert shown.returncode == 1 and shown.stderr.strip().splitlines() == [
        f"error: no entity '[/] [bold]x' in {store_path}"], shown.stderr

    # `factory search`: SQL as the query is just words; the hits are the chunks that hold them
    code, out = _cli("search", "'; DROP TABLE tasks; --", "--index", index, "--json")
    hits = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert code == 0 and hits
    top = store.scalar("SELECT text FROM chunks WHERE chunk_id = ?", [hits[0]["chunk_id"]])
    assert "DROP TABLE tasks" in top
    code, out = _cli("search", "x' OR '1'='1 [/]", "--index", index)
    assert code == 0
    code, out = _cli("stats", "--store", store_path)
    assert code == 0

    # export and eval into a folder whose name is SQL and quotes: the same benchmark and scores
    from factory.export import export_benchmark
    from factory.settings import Settings

    scores = {}
    for name in ("plain", QUOTED_DIR):
        out_dir = tmp_path / name
        summary = export_benchmark(store, index, out_dir, "hostile", Settings(), lang="en")
        assert summary.tasks == before["tasks"]
        code, out = _cli("eval", "--benchmark", out_dir, "--retriever", "bm25", "--out", out_dir / "eval")
        assert code == 0, out
        metrics = json.loads((out_dir / "eval" / "metrics.json").read_text())
        corpus_ids = [json.loads(line)["_id"] for line in (out_dir / "corpus.jsonl").read_text().splitlines()]
        assert set(f"{doc_id}_0" for doc_id in SQL_IDS) <= set(corpus_ids)
        scores[name] = (metrics, sorted(corpus_ids), (out_dir / "qrels" / "test.tsv").read_text())
    assert scores["plain"][1:] == scores[QUOTED_DIR][1:]
    assert _scores(scores["plain"][0]) == _scores(scores[QUOTED_DIR][0])

    # every table intact, nothing added or dropped by any of it
    assert _counts(Store(store_path)) == before
