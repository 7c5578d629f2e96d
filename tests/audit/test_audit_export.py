"""The audit on a folder the factory exported: tasks.jsonl supplies answer chunks and bridge
entities, the exported index is reused, and `factory audit` runs from the command line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from factory.cli import app
from factory.export import export_benchmark
from factory.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = "run-audit-export"

TASKS = [
    # names its bridge entity (the ironworks' founder) in the question
    {"question": "In which year did Edmund Carrow open the ironworks of the market town on the left bank of the River "
                 "Ashkel?", "answer": "1834", "support": ["en_place_001_0", "en_person_007_0"],
     "answer_chunk": "en_place_001_0", "bridges": ["Edmund Carrow"]},
    # says nothing any passage says
    {"question": "How long is the stream whose source a mapmaker corrected?", "answer": "312 kilometres",
     "support": ["en_person_vantongeren_0", "en_river_ashkel_0"], "answer_chunk": "en_river_ashkel_0",
     "bridges": ["Ilse Vantongeren"]},
]


def _populate(store) -> None:
    chunks = []
    for line in (FIXTURES / "corpus_en.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        chunks.append({"chunk_id": f"{doc['id']}_0", "doc_id": doc["id"], "n": 0, "lang": "en", "title": doc["title"],
                       "text": doc["text"], "content_hash": hashlib.sha256(doc["text"].encode()).hexdigest()[:16],
                       "n_tokens": len(doc["text"].split()), "char_start": 0, "char_end": len(doc["text"]),
                       "run_id": "ingest"})
    store.append("chunks", chunks)
    tasks, candidates = [], []
    for i, t in enumerate(TASKS):
        cid = f"{RUN}/c{i:05d}"
        tasks.append({
            "task_id": cid, "run_id": RUN, "candidate_id": cid, "draft_id": f"{cid}/0", "lang": "en",
            "cell": "chain/direct/number", "mechanic": "chain", "form": "direct", "answer_type": "number",
            "question": t["question"], "answer": t["answer"], "answer_aliases": [], "support_chunk_ids": t["support"],
            "answer_chunk_id": t["answer_chunk"], "bridge_entities": t["bridges"], "revisions": 0,
            "validators": ["schema"], "skipped_validators": [], "difficulty": {},
        })
        candidates.append({"candidate_id": cid, "run_id": RUN, "idx": i, "status": "accepted",
                           "cell": "chain/direct/number", "attempts": 1, "revisions": 0, "prunes": 0, "task_id": cid})
    store.append("tasks", tasks)
    store.append("candidates", candidates)


def test_audit_of_an_exported_folder(tmp_path, store):
    from factory.index.fixed import build_index

    _populate(store)
    build_index(store, tmp_path / "index", "en", dense=None, progress=False)
    export_benchmark(store, tmp_path / "index", tmp_path / "bench", RUN, Settings(), lang="en")
    assert (tmp_path / "bench" / "tasks.jsonl").is_file() and (tmp_path / "bench" / "index").is_dir()

    out = tmp_path / "audit"
    result = CliRunner().invoke(app, ["audit", "--benchmark", str(tmp_path / "bench"), "--out", str(out),
                                      "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "flagged by at least one validator" in result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["from_factory_export"] and summary["index"]["reused_from_benchmark"]
    rows = {r["qid"]: r for r in map(json.loads, (out / "audit.jsonl").read_text(encoding="utf-8").splitlines())}
    first, second = rows[f"{RUN}/c00000"], rows[f"{RUN}/c00001"]
    assert first["answer_chunk_ids"] == ["en_place_001_0"]  # from tasks.jsonl, not guessed
    assert first["bridge_entities"] == ["Edmund Carrow"]
    assert first["verdicts"]["leakage"]["reason"] == "bridge_leaked"
    assert "leakage" in first["flagged_by"] and "shortcut" in first["flagged_by"]
    assert second["verdicts"]["leakage"]["status"] == "pass"
    assert second["verdicts"]["closed_book"]["reason"] == "no_llm"


def test_cli_errors_are_one_line(tmp_path):
    result = CliRunner().invoke(app, ["audit", "--benchmark", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert result.exit_code != 0
    assert "no benchmark folder here" in str(result.exception)
