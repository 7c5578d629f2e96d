"""`factory ingest`, `factory stats`, `factory corpus list` through the Typer app; one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.corpus.readers import CorpusError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
runner = CliRunner()


def test_ingest_then_stats(tmp_path):
    store = tmp_path / "store"
    result = runner.invoke(app, ["ingest", "--corpus", str(FIXTURES / "corpus_ru.jsonl"), "--lang", "ru",
                                 "--store", str(store), "--chunk-tokens", "40", "--no-entities"])
    assert result.exit_code == 0, result.output
    assert "documents read" in result.output and "20" in result.output
    result = runner.invoke(app, ["stats", "--store", str(store)])
    assert result.exit_code == 0, result.output
    line = next(l for l in result.stdout.splitlines() if l.strip("│┃ ").startswith("ru"))
    cells = [c.strip() for c in line.strip("│┃").split("│")]
    assert cells[0] == "ru" and cells[1] == "20" and int(cells[2]) > 20 and int(cells[5]) <= 40
    assert "ingest errors: none" in result.output


def test_bad_input_is_a_clean_failure(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "a", "text": "Fine."}\n{"id": \n')
    args = ["ingest", "--corpus", str(bad), "--lang", "en", "--store", str(tmp_path / "s"), "--no-entities"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and f"{bad}:2: malformed JSON" in result.output.replace("\n", "")
    result = runner.invoke(app, [*args, "--strict"])
    assert isinstance(result.exception, CorpusError) and f"{bad}:2:" in str(result.exception)
    result = runner.invoke(app, ["ingest", "--corpus", str(bad), "--lang", "fr", "--store", str(tmp_path / "s")])
    assert result.exit_code != 0
    result = runner.invoke(app, ["corpus", "list"])
    assert result.exit_code == 0 and "enwiki-vital" in result.output


@pytest.mark.slow
def test_console_script_prints_one_line_and_exits_1(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "factory.cli", "ingest", "--corpus", str(tmp_path / "missing.jsonl"),
         "--lang", "en", "--store", str(tmp_path / "s"), "--no-entities"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "missing.jsonl: no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr
