"""The refused-answer memory's rows (factory.store.refused): forgetting one answer, or every
answer only one run refused (`factory refused --forget-run`)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from factory.cli import app
from factory.store.refused import forget, refusal_row, refused_keys, run_only_keys


def _refuse(store, key: str, run_id: str) -> None:
    store.append("refused_answers", [refusal_row("en", key, reason="no_honest_question", name=key, cell="chain/direct/person",
                                                 draft_id=f"{run_id}-{key}", run_id=run_id)])


def test_forgetting_a_run_lets_back_only_the_answers_no_other_run_refused(store) -> None:
    _refuse(store, "weak only", "weak")
    _refuse(store, "both", "weak")
    _refuse(store, "both", "strong")
    _refuse(store, "strong only", "strong")
    _refuse(store, "forgotten then weak", "strong")
    forget(store, "en", ["forgotten then weak"])
    _refuse(store, "forgotten then weak", "weak")  # the strong run's refusal was forgotten before
    assert run_only_keys(store, "en", "weak") == ["forgotten then weak", "weak only"]
    assert run_only_keys(store, "en", "nobody") == []

    result = CliRunner().invoke(app, ["refused", "--store", str(store.root), "--lang", "en", "--forget-run", "weak"])
    assert result.exit_code == 0 and "2 answers refused only by run weak" in result.output
    assert sorted(refused_keys(store, "en")) == ["both", "strong only"]
    rows = [json.loads(line) for line in CliRunner().invoke(
        app, ["refused", "--store", str(store.root), "--lang", "en", "--all", "--json"]).output.splitlines()]
    notes = {r["entity_key"]: r["note"] for r in rows if r["latest"] == "forgotten"}
    assert notes == {"weak only": "forgotten with run weak", "forgotten then weak": "forgotten with run weak"}
    assert run_only_keys(store, "en", "weak") == []  # nothing left to forget
    both = CliRunner().invoke(app, ["refused", "--store", str(store.root), "--lang", "en", "--forget", "both",
                                    "--forget-run", "strong"])
    assert both.exit_code != 0 and sorted(refused_keys(store, "en")) == ["both", "strong only"]
