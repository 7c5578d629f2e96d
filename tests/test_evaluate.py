"""Evaluation: Recall@k of the final set, trajectory recall, run files cross-checked with ir-measures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import ir_measures
import pytest
from ir_measures import R
from typer.testing import CliRunner

from factory.agent import SearchAgent
from factory.evaluate import (
    QueryRun, evaluate, final_units, load_benchmark, open_benchmark_index, recall_at_k, score, trajectory_recall,
    write_trec_run,
)
from factory.errors import FactoryError
from factory.llm.fake import FakeLLM
from factory.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# multi-hop questions over the fictional fixture corpus; support = chunks of two documents
QUERIES = [
    ("q1", "Which flood carried away the bridge whose iron spans came from the Vellmoor works?", "bridge",
     ["en_bridge_carrow_0", "en_event_flood_1891_0"]),
    ("q2", "Where was the founder of the Ashkel Valley Ironworks born, and where did he work as a clerk?", "bridge",
     ["en_person_007_0", "en_org_greyl_line_0", "en_org_greyl_line_1"]),
    ("q3", "Which college did the author of The Glass Orchard attend?", "composition",
     ["en_person_oswick_0", "en_college_halbridge_0"]),
    ("q4", "Who mapped the source of the river that feeds Lake Tessaly, and which society did she found?", "composition",
     ["en_person_vantongeren_0", "en_org_ncs_0"]),
    ("q5", "Which chess master from the lakeside town worked for the shipping company of Port Sallow?", "intersection",
     ["en_person_pretch_0", "en_org_greyl_line_0"]),
    ("q6", "What is the height of the peak where the Ashkel rises, as corrected by survey?", "bridge",
     ["en_mount_orrin_0", "en_mount_orrin_1"]),
]


def write_benchmark(root: Path) -> Path:
    """A BEIR folder: each fixture document split into two chunks, with doc_id."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in open(FIXTURES / "corpus_en.jsonl", encoding="utf-8"):
        doc = json.loads(line)
        sentences = re.split(r"(?<=\.) ", doc["text"])
        half = max(1, len(sentences) // 2)
        for n, part in enumerate([sentences[:half], sentences[half:]]):
            if part:
                lines.append({"_id": f"{doc['id']}_{n}", "title": doc["title"], "text": " ".join(part), "doc_id": doc["id"]})
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    queries = [{"_id": q, "text": t, "mechanic": m} for q, t, m, _ in QUERIES]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n", encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{c}\t1" for q, _, _, gold in QUERIES for c in gold]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory) -> Path:
    root = write_benchmark(tmp_path_factory.mktemp("bench") / "b")
    from factory.index.fixed import build_index_from_chunks

    chunks = [{"chunk_id": r["_id"], "title": r["title"], "text": r["text"]}
              for r in map(json.loads, open(root / "corpus.jsonl", encoding="utf-8"))]
    build_index_from_chunks(chunks, root / "index", "en", Settings(), dense="hashing", progress=False)
    return root


def ir_recall(run_file: Path, qrels_file: Path) -> tuple[float, dict[str, float]]:
    qrels = list(ir_measures.read_trec_qrels(str(qrels_file)))
    run = list(ir_measures.read_trec_run(str(run_file)))
    per = {m.query_id: m.value for m in ir_measures.iter_calc([R @ 10], qrels, run)}
    return ir_measures.calc_aggregate([R @ 10], qrels, run)[R @ 10], per


def test_recall_counts_final_set_before_mapping_and_dedup():
    doc = {"a_0": "a", "a_1": "a", "a_2": "a", "b_0": "b", "c_0": "c"}.get
    ranking = ["a_0", "a_1", "a_2", "b_0", "c_0"]
    # k=3 keeps three chunks of one document: only 'a' is found, though mapping would free two slots
    assert recall_at_k(ranking, {"a", "b"}, k=3, unit_of=doc) == 0.5
    assert recall_at_k(ranking, {"a", "b"}, k=4, unit_of=doc) == 1.0
    assert recall_at_k(ranking, {"a_0", "c_0"}, k=10) == 1.0
    assert trajectory_recall(["x", "c_0", "c_0"], {"a_0", "c_0"}) == 0.5
    assert recall_at_k([], set(), 10) == 0.0


def test_load_benchmark_and_doc_mapping(bench_dir):
    bench = load_benchmark(bench_dir)
    assert [q.qid for q in bench.queries] == [q for q, *_ in QUERIES]
    assert bench.unit_of("en_org_greyl_line_1", "doc") == "en_org_greyl_line"
    assert bench.relevant("q2", "doc") == {"en_person_007", "en_org_greyl_line"}  # two chunks, credited once
    assert bench.relevant("q2", "chunk") == {"en_person_007_0", "en_org_greyl_line_0", "en_org_greyl_line_1"}


def test_load_benchmark_errors_name_file_and_line(tmp_path):
    root = write_benchmark(tmp_path / "bad")
    with open(root / "qrels" / "test.tsv", "a", encoding="utf-8") as handle:
        handle.write("q1 en_place_001_0 1\n")
    with pytest.raises(FactoryError, match=r"test\.tsv:15: expected query-id<TAB>corpus-id<TAB>score"):
        load_benchmark(root)


def test_run_file_ties_broken_by_id_and_units_deduplicated(tmp_path, bench_dir):
    bench = load_benchmark(bench_dir)
    run = QueryRun(qid="q2", ranking=[("en_org_greyl_line_1", 2.0), ("en_person_007_0", 2.0), ("en_org_greyl_line_0", 1.5)])
    assert final_units(run.ranking, bench, "doc", 10) == [("en_org_greyl_line", 2.0), ("en_person_007", 2.0)]
    path = write_trec_run(tmp_path / "r.trec", bench, {"q2": run}, "chunk", 10, tag="t")
    assert path.read_text().splitlines() == [
        "q2 Q0 en_org_greyl_line_1 1 2.000000 t",
        "q2 Q0 en_person_007_0 2 2.000000 t",
        "q2 Q0 en_org_greyl_line_0 3 1.500000 t",
    ]


@pytest.mark.parametrize("unit", ["chunk", "doc"])
@pytest.mark.parametrize("retriever", ["bm25", "dense", "hybrid"])
def test_recall_equals_ir_measures(bench_dir, tmp_path, retriever, unit):
    bench = load_benchmark(bench_dir)
    index = open_benchmark_index(bench, Settings())
    report = evaluate(bench, retriever, index=index, unit=unit, out=tmp_path)
    ours = {row["qid"]: row["recall"] for row in report.per_query}
    aggregate, per = ir_recall(Path(report.run_file), tmp_path / f"qrels.{unit}.trec")
    assert report.queries == 6
    assert per == pytest.approx(ours, abs=1e-12)
    assert report.recall == pytest.approx(aggregate, abs=1e-12)
    assert 0 < report.recall <= 1
    lines = Path(report.run_file).read_text().splitlines()
    per_query = {}
    for line in lines:
        per_query.setdefault(line.split()[0], []).append(line)
    assert max(len(v) for v in per_query.values()) <= 10
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics[f"{retriever}/{unit}"]["recall"] == report.recall


def agent_policy(request):
    """A rule-following fake agent: search the question, then rank what it saw."""
    last = request.messages[-1].content or ""
    ids = re.findall(r"chunk_id: (\S+)", last)
    if ids:
        return {"action": "finalize_ranking", "arguments": {
            "ranking": [{"chunk_id": c, "reason": "it was the best match for the question"} for c in ids],
            "covered_concepts": ["question"], "unresolved_concepts": []}}
    question = re.search(r"Question: (.*)", request.messages[1].content).group(1)
    return {"action": "search_corpus", "arguments": {"query": question, "top_k": 5}}


def test_agent_eval_matches_ir_measures_and_tracks_trajectory(bench_dir, tmp_path, store):
    bench = load_benchmark(bench_dir)
    index = open_benchmark_index(bench, Settings())
    llm = FakeLLM(default=agent_policy, context_tokens=131_072)
    report = evaluate(bench, "agent", index=index, llm=llm, settings=Settings(), rollouts=2, out=tmp_path, store=store)
    assert report.rollouts == 2 and report.queries == 6
    aggregate, _ = ir_recall(Path(report.run_file), tmp_path / "qrels.chunk.trec")
    assert report.recall == pytest.approx(aggregate, abs=1e-12)
    # the agent searched the question with BM25 and ranked its top 5: recall equals BM25@5's
    bm25 = index.searcher("bm25")
    expected = [recall_at_k([h.chunk_id for h in bm25.search(q.text, 5)], bench.relevant(q.qid, "chunk")) for q in bench.queries]
    assert report.recall == pytest.approx(sum(expected) / 6)
    assert report.trajectory_recall >= report.recall
    assert store.scalar("SELECT count(*) FROM agent_episodes WHERE stage = 'eval'") == 12
    # every episode finalized: the finalized-only recall is the recall
    assert report.ended == {"finalized": 6, "fallback": 0, "error": 0} and report.finalized_queries == 6
    assert report.recall_finalized == pytest.approx(report.recall)
    assert all(row["ended"] == "finalized" and row["finalized"] == 2 for row in report.per_query)


def test_agent_eval_says_how_each_episode_ended(bench_dir, tmp_path):
    """Recall over all queries mixes the harness's fallback rankings in; over finalized ones it does not."""
    from factory.llm.types import LLMResponse

    bench = load_benchmark(bench_dir)
    index = open_benchmark_index(bench, Settings())
    plan = {q.qid: ("finalized", "fallback", "error")[i % 3] for i, q in enumerate(bench.queries)}
    texts = {q.text: q.qid for q in bench.queries}

    def policy(request):
        qid = texts[re.search(r"Question: (.*)", request.messages[1].content).group(1)]
        if plan[qid] == "error":
            return LLMResponse(error="HTTP 503 the server is gone")
        if plan[qid] == "fallback" and len(request.messages) > 2:
            return "I would rather not rank anything."  # prose: no tool call, the round ends, nothing finalized
        return agent_policy(request)

    settings = Settings(agent={"max_rounds": 1, "standard": {"llm_retry_wait_s": 0}})
    report = evaluate(bench, "agent", index=index, llm=FakeLLM(default=policy, context_tokens=131_072),
                      settings=settings, out=tmp_path)
    assert report.ended == {"finalized": 2, "fallback": 2, "error": 2}
    assert {row["qid"]: row["ended"] for row in report.per_query} == plan
    finalized = [row["recall"] for row in report.per_query if row["ended"] == "finalized"]
    assert report.finalized_queries == 2 and report.recall_finalized == pytest.approx(sum(finalized) / 2)
    assert json.loads((tmp_path / "metrics.json").read_text())["agent/chunk"]["ended"] == report.ended
    # the run file still lists every query's final set, fallback and error rankings too, with the stable tie-break
    lines = Path(report.run_file).read_text().splitlines()
    ranked = {line.split()[0] for line in lines}
    assert {q for q, how in plan.items() if how != "error"} <= ranked
    for qid in ranked:
        scores = [(-float(l.split()[4]), l.split()[2]) for l in lines if l.split()[0] == qid]
        assert scores == sorted(scores)


def test_score_skips_unjudged_queries_and_groups_mechanics(bench_dir):
    bench = load_benchmark(bench_dir)
    runs = {"q1": QueryRun(qid="q1", ranking=[("en_bridge_carrow_0", 1.0)], seen=["en_bridge_carrow_0", "en_event_flood_1891_0"])}
    report = score(bench, runs, "x")
    assert report.queries == 6
    assert report.per_mechanic["bridge"]["queries"] == 3
    assert report.per_query[0]["recall"] == 0.5 and report.per_query[0]["trajectory_recall"] == 1.0


def test_cli_eval_writes_runs_metrics_and_table(bench_dir, tmp_path):
    from factory.cli import app

    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--benchmark", str(bench_dir), "--retriever", "bm25",
                                      "--retriever", "hybrid", "--unit", "doc", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "R@10" in result.output and "bm25" in result.output and "per mechanic" in result.output
    assert (out / "run.bm25.doc.trec").is_file() and (out / "run.hybrid.doc.trec").is_file()
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"bm25/doc", "hybrid/doc"}
    aggregate, _ = ir_recall(out / "run.bm25.doc.trec", out / "qrels.doc.trec")
    assert metrics["bm25/doc"]["recall"] == pytest.approx(aggregate, abs=1e-12)


def test_cli_eval_agent_with_fake_spec(bench_dir, tmp_path, monkeypatch):
    from factory.cli import app

    # the `fake` spec answers with the first schema branch forever: bound the loop
    monkeypatch.setenv("FACTORY_AGENT__MAX_ROUNDS", "1")
    monkeypatch.setenv("FACTORY_AGENT__STANDARD__MAX_TURNS_PER_ROUND", "3")
    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--benchmark", str(bench_dir), "--retriever", "agent", "--llm", "fake",
                                      "--limit", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["agent/chunk"]["queries"] == 2
    assert (out / "store").is_dir() and (out / "run.agent.trec").is_file()
    assert "how its episodes ended" in result.output and "fallback" in result.output and "agent per query" in result.output
    assert sum(metrics["agent/chunk"]["ended"].values()) == 2


def test_cli_eval_bad_retriever_is_one_line_error(bench_dir):
    from factory.cli import app

    result = CliRunner().invoke(app, ["eval", "--benchmark", str(bench_dir), "--retriever", "bm26"])
    assert result.exit_code != 0
    assert "bm26" in str(result.exception) or "bm26" in result.output


def test_cli_eval_builds_an_index_when_the_folder_has_none(tmp_path):
    from factory.cli import app

    root = write_benchmark(tmp_path / "plain")
    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--benchmark", str(root), "--retriever", "bm25", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "has no" in result.output and (out / "scratch" / "index" / "manifest.json").is_file()
    first = json.loads((out / "metrics.json").read_text())["bm25/chunk"]["recall"]
    again = CliRunner().invoke(app, ["eval", "--benchmark", str(root), "--retriever", "bm25", "--out", str(out)])
    assert again.exit_code == 0 and json.loads((out / "metrics.json").read_text())["bm25/chunk"]["recall"] == first


def test_ids_with_spaces_survive_trec_files(tmp_path):
    """TREC files split on whitespace: ids holding spaces are percent-encoded there, so
    ir-measures reads them and agrees with our Recall@10 (the BEIR files keep them raw)."""
    from factory.index.fixed import build_index_from_chunks
    from factory.benchmark_folder import from_trec_id, trec_id

    root = write_benchmark(tmp_path / "b")
    rows = [json.loads(line) for line in open(root / "corpus.jsonl", encoding="utf-8")]
    renamed = {r["_id"]: f"{r['doc_id']} part {r['_id'][-1]} 100%" for r in rows}  # "en_x part 0 100%"
    for r in rows:
        r["_id"] = renamed[r["_id"]]
        r["doc_id"] = r["doc_id"] + " doc"
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore"] + [f"{q} x\t{renamed[c]}\t1" for q, _, _, gold in QUERIES for c in gold]
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    queries = [{"_id": f"{q} x", "text": t, "mechanic": m} for q, t, m, _ in QUERIES]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n", encoding="utf-8")
    build_index_from_chunks([{"chunk_id": r["_id"], "title": r["title"], "text": r["text"]} for r in rows],
                            root / "index", "en", Settings(), dense=None, progress=False)
    bench = load_benchmark(root)
    for unit in ("chunk", "doc"):
        report = evaluate(bench, "bm25", index=open_benchmark_index(bench, Settings()), unit=unit, out=tmp_path / "e")
        aggregate, per = ir_recall(Path(report.run_file), tmp_path / "e" / f"qrels.{unit}.trec")
        assert report.recall > 0 and report.recall == pytest.approx(aggregate, abs=1e-12)
        assert {from_trec_id(q): v for q, v in per.items()} == pytest.approx(
            {row["qid"]: row["recall"] for row in report.per_query}, abs=1e-12)
    assert trec_id("a b%c\td") == "a%20b%25c%09d" and from_trec_id(trec_id("a b%c\td")) == "a b%c\td"
    assert trec_id("enwv-ac6ccaa766_0") == "enwv-ac6ccaa766_0"
