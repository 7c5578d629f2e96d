"""`factory eval` on an audited BEIR folder (no tasks.jsonl, no index/): its Recall@10 for
BM25 equals what ir-measures computes from the same run file, and what the audit's
shortcut check saw for the questions as broad queries."""

from __future__ import annotations

import json

import ir_measures
from ir_measures import R
from typer.testing import CliRunner

from factory.audit import run_audit
from factory.cli import app
from factory.settings import Settings

from audit_folder import write_folder


def _distractors(shared_corpora, n: int = 300) -> list[tuple]:
    """Leads of real articles, so a top 10 does not hold the whole corpus."""
    out = []
    with open(shared_corpora / "en-wiki-vital" / "docs.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            out.append((f"{doc['id']}_0", doc["id"], doc["title"], doc["text"][:700]))
            if len(out) >= n:
                break
    return out


def test_eval_recall_equals_ir_measures_and_the_audit(tmp_path, shared_corpora):
    root = write_folder(tmp_path / "bench", extra_passages=_distractors(shared_corpora))
    audit = run_audit(root, tmp_path / "audit", Settings(validation={"shortcut_searchers": ["bm25"]}), lang="en",
                      dense="none", validators=["schema", "shortcut"])
    assert not (root / "tasks.jsonl").exists() and not (root / "index").exists()

    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--benchmark", str(root), "--retriever", "bm25", "--out", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["bm25/chunk"]

    qrels = [ir_measures.Qrel(q, c, int(s))
             for q, c, s in (line.split("\t") for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:])]
    run = list(ir_measures.read_trec_run(str(out / "run.bm25.trec")))
    expected = ir_measures.calc_aggregate([R @ 10], qrels, run)[R @ 10]
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([R @ 10], qrels, run)}

    assert metrics["queries"] == 5
    assert abs(metrics["recall"] - expected) < 1e-9
    assert 0 < expected < 1  # neither trivially found nor trivially missed
    # the audit's broad-query recall is the same search: same figure, question by question
    assert abs(audit.summary["broad_query_recall"]["bm25"] - expected) < 1e-9
    for item in audit.questions:
        shortcut = next(v for v in item.verdicts if v.validator == "shortcut")
        found = shortcut.figures["searchers"]["bm25"]["support_in_top"]
        assert abs(found / len(item.draft.support_chunk_ids) - per_query.get(item.question.qid, 0.0)) < 1e-9


def test_eval_reads_judgements_where_beir_folders_put_them(tmp_path):
    """Folders the audit accepts (qrels.tsv, one qrels/SPLIT.tsv) are folders `factory eval` scores."""
    for name in ("qrels.tsv", "qrels/dev.tsv"):
        root = write_folder(tmp_path / name.replace("/", "-"), qrels_name=name)
        out = tmp_path / f"eval-{name.replace('/', '-')}"
        result = CliRunner().invoke(app, ["eval", "--benchmark", str(root), "--retriever", "bm25", "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["bm25/chunk"]["queries"] == 5
