"""The benchmark folder: BEIR and `datasets` read it, qrels agree, the card has its plots."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factory.export import export_benchmark
from factory.settings import load_settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUN = "run-export-test"


def _chunks(lang: str) -> list[dict]:
    """Two chunks per fixture article (first half of its sentences, second half)."""
    rows = []
    for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        sentences = doc["text"].split(". ")
        half = max(1, len(sentences) // 2)
        for n, part in enumerate([". ".join(sentences[:half]), ". ".join(sentences[half:])]):
            if not part:
                continue
            rows.append({
                "chunk_id": f"{doc['id']}_{n}", "doc_id": doc["id"], "n": n, "lang": lang, "title": doc["title"],
                "text": part, "content_hash": hashlib.sha256(part.encode()).hexdigest()[:16],
                "n_tokens": len(part.split()), "char_start": 0, "char_end": len(part), "run_id": "ingest",
            })
    return rows


def _populate(store, lang: str = "en") -> list[dict]:
    chunks = _chunks(lang)
    store.append("chunks", chunks)
    cells = ["chain/direct/person", "chain/nested/place", "intersection/direct/organisation"]
    tasks, candidates, verdicts = [], [], []
    for i, cell in enumerate(cells):
        mechanic, form, answer_type = cell.split("/")
        cid = f"{RUN}/c{i:05d}"
        support = [chunks[2 * i]["chunk_id"], chunks[2 * i + 3]["chunk_id"]]
        tasks.append({
            "task_id": cid, "run_id": RUN, "candidate_id": cid, "draft_id": f"{cid}/1", "lang": lang, "cell": cell,
            "mechanic": mechanic, "form": form, "answer_type": answer_type,
            "question": f"Which | thing number {i} is <b>described</b> here?", "answer": f"Answer {i}",
            "answer_aliases": [f"A{i}"], "support_chunk_ids": support, "answer_chunk_id": support[-1],
            "bridge_entities": ["Vellmoor"], "revisions": i % 2, "validators": ["schema", "leakage"],
            "skipped_validators": ["agent_run"], "difficulty": {"agent": {"searches": 3 + i, "recall": 0.5 * (i % 3)},
                                              "solvability": {"solved": 2 + i % 2, "samples": 3}},
        })
        candidates.append({"candidate_id": cid, "run_id": RUN, "idx": i, "status": "accepted", "cell": cell,
                           "attempts": 1 + i, "revisions": i % 2, "prunes": 0, "task_id": cid, "tokens": 100})
        verdicts += [
            {"draft_id": f"{cid}/1", "candidate_id": cid, "run_id": RUN, "attempt": 1, "step": s, "validator": v,
             "ok": True, "hard": True, "skipped": False, "reason": "", "feedback": "", "figures": {}, "elapsed_s": 0.01}
            for s, v in enumerate(["schema", "leakage"])
        ]
        verdicts.append({"draft_id": f"{cid}/1", "candidate_id": cid, "run_id": RUN, "attempt": 1, "step": 6,
                         "validator": "agent_run", "ok": False, "hard": False, "skipped": True, "reason": "off",
                         "feedback": "validation.agent_run is off", "figures": {}, "elapsed_s": 0.0})
    rejected = f"{RUN}/c00003"
    candidates.append({"candidate_id": rejected, "run_id": RUN, "idx": 3, "status": "rejected",
                       "cell": cells[0], "stage": "gauntlet", "validator": "leakage", "reason": "answer_leaked"})
    verdicts.append({"draft_id": f"{rejected}/0", "candidate_id": rejected, "run_id": RUN, "attempt": 0, "step": 1,
                     "validator": "leakage", "ok": False, "hard": True, "skipped": False, "reason": "answer_leaked",
                     "feedback": "the question names the answer", "figures": {}, "elapsed_s": 0.02})
    # an older run in the same store must not leak into this export
    tasks.append({**tasks[0], "task_id": "other-run/c0", "candidate_id": "other-run/c0", "run_id": "other-run"})
    store.append("tasks", tasks)
    store.append("candidates", candidates)
    store.append("verdicts", verdicts)
    return chunks


def _index_dir(store, tmp_path: Path, lang: str = "en") -> Path:
    from factory.index.fixed import build_index

    build_index(store, tmp_path / "index", lang, dense=None, progress=False)
    return tmp_path / "index"


def beir_load(folder: Path, split: str = "test") -> tuple[dict, dict, dict]:
    """BEIR GenericDataLoader semantics: corpus and queries by _id, qrels from a headed TSV,
    queries kept only when they have qrels."""
    corpus = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            corpus[row["_id"]] = {"text": row["text"], "title": row.get("title", "")}
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            queries[row["_id"]] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        assert next(reader) == ["query-id", "corpus-id", "score"]
        for qid, cid, score in reader:
            qrels.setdefault(qid, {})[cid] = int(score)
    queries = {qid: queries[qid] for qid in qrels}
    return corpus, queries, qrels


def test_export_reads_as_beir_and_datasets(store, tmp_path: Path) -> None:
    chunks = _populate(store)
    settings = load_settings(**{"lang": "en", "build.corpus_license": "CC BY-SA 4.0 (fixture)"})
    (tmp_path / "corpus").mkdir()
    corpus_file = tmp_path / "corpus" / "docs.jsonl"
    corpus_file.write_text("{}\n")
    (tmp_path / "corpus" / "ATTRIBUTION.md").write_text("Written for the tests.\n")
    out = tmp_path / "bench"
    summary = export_benchmark(store, _index_dir(store, tmp_path), out, RUN, settings,
                               corpus_path=str(corpus_file), params={"n": 3, "llm_spec": "fake"})

    assert summary.tasks == 3 and summary.chunks == len(chunks) and summary.qrels == 6
    corpus, queries, qrels = beir_load(out)
    assert len(corpus) == len(chunks)
    assert set(queries) == {f"{RUN}/c{i:05d}" for i in range(3)}
    for qid, rel in qrels.items():
        assert rel and all(cid in corpus for cid in rel)
    assert queries[f"{RUN}/c00001"].startswith("Which | thing number 1")

    trec = [line.split() for line in (out / "qrels.trec").read_text().splitlines()]
    assert {(q, c) for q, _, c, _ in trec} == {(q, c) for q, rel in qrels.items() for c in rel}
    assert all(zero == "0" and rel == "1" for _, zero, _, rel in trec)

    from datasets import load_dataset

    tasks = load_dataset("json", data_files=str(out / "tasks.jsonl"), split="train")
    assert tasks.num_rows == 3
    assert tasks[2]["support_chunk_ids"] == [chunks[4]["chunk_id"], chunks[7]["chunk_id"]]
    assert tasks[2]["support_doc_ids"] == [chunks[4]["doc_id"], chunks[7]["doc_id"]]
    assert tasks[1]["difficulty"]["agent"]["searches"] == 4
    docs = load_dataset("json", data_files=str(out / "corpus.jsonl"), split="train")
    assert docs.num_rows == len(chunks) and set(docs.column_names) == {"_id", "title", "text", "doc_id"}
    mapping = dict(zip(docs["_id"], docs["doc_id"]))
    assert all(mapping[c["chunk_id"]] == c["doc_id"] for c in chunks)

    parquet = pq.read_table(out / "tasks.parquet").to_pylist()
    assert [r["task_id"] for r in parquet] == [t["task_id"] for t in tasks]
    assert json.loads(parquet[0]["difficulty"])["agent"] == {"recall": 0.0, "searches": 3}
    assert pq.read_table(out / "chunks.parquet").num_rows == len(chunks)

    from factory.index.fixed import open_index

    index = open_index(out / "index", corpus_path=out / "corpus.jsonl")  # what `factory eval` does
    assert len(index) == len(chunks)
    top = index.searcher("bm25").search(chunks[5]["text"], k=1)
    assert top[0].chunk_id == chunks[5]["chunk_id"]
    saved = json.loads((out / "settings.json").read_text())
    assert saved["run_id"] == RUN and saved["settings"]["build"]["corpus_license"].startswith("CC BY-SA")
    licence = (out / "LICENSE").read_text()
    assert "CC BY-SA 4.0 (fixture)" in licence and "corpus_notices/ATTRIBUTION.md" in licence
    assert (out / "corpus_notices" / "ATTRIBUTION.md").exists()
    assert "> Written for the tests." in (out / "card.md").read_text()


def test_card_has_plots_and_escapes_corpus_text(store, tmp_path: Path) -> None:
    chunks = _populate(store)
    settings = load_settings(**{"lang": "en", "build.profile": "demo"})
    out = tmp_path / "bench"
    export_benchmark(store, _index_dir(store, tmp_path), out, RUN, settings, params={"n": 5, "llm_spec": "fake"})
    plots = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert {"coverage.png", "funnel.png", "revisions.png"} <= set(plots)
    assert {"difficulty_support_size.png", "difficulty_agent_searches.png", "difficulty_solvability.png"} <= set(plots)
    for name in plots:
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    card = (out / "card.md").read_text()
    assert "accepted tasks | 3 (target 5)" in card
    assert "acceptance rate | 75.0%" in card  # 3 accepted of 4 finished candidates
    assert "leakage" in card and "agent.max_rounds" in card and "may not change them" in card
    assert "agent\\_run did not run on any of 3 drafts (validation.agent\\_run is off)" in card
    html = (out / "card.html").read_text()
    assert "<b>described</b>" not in html and "&lt;b&gt;described&lt;/b&gt;" in html
    assert 'src="plots/funnel.png"' in html
    # every validator of the gauntlet has its funnel row, in order, also those no draft reached
    rows = [line.split("|")[2].strip().replace("\\_", "_") for line in card.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert rows[:len(settings.validation.order)] == list(settings.validation.order)
    # one example per mechanic at most twice, both mechanics shown
    assert card.count("### chain") == 1 and card.count("### intersection") == 1


def test_export_refuses_an_index_over_other_chunks(store, tmp_path: Path) -> None:
    from factory.index.base import SearchIndexError

    chunks = _populate(store)
    index = _index_dir(store, tmp_path)
    store.append("chunks", [{**chunks[0], "chunk_id": "late_0", "doc_id": "late"}])
    with pytest.raises(SearchIndexError, match="rebuild"):
        export_benchmark(store, index, tmp_path / "out", RUN, load_settings())


def test_card_axes_come_from_the_run_taxonomy(store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build with its own taxonomy (compose.taxonomy_dir) gets that taxonomy's axes on its card."""
    import factory.export

    from generate_world import chain_only_taxonomy

    _populate(store)
    chain_only_taxonomy(Path(__file__).resolve().parents[1] / "taxonomy", tmp_path / "taxonomy")
    cards = []
    monkeypatch.setattr(factory.export, "write_card", lambda card, out: cards.append(card) or [])
    index = _index_dir(store, tmp_path)
    export_benchmark(store, index, tmp_path / "own", RUN, load_settings(**{"compose.taxonomy_dir": str(tmp_path / "taxonomy")}))
    export_benchmark(store, index, tmp_path / "default", RUN, load_settings())
    own, default = cards
    assert own.mechanics == ["chain"]
    assert set(default.mechanics) > {"chain", "intersection"}
