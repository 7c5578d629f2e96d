"""The benchmark folder's one reader: both qrels layouts, splits, TREC ids, and the same
judgements for eval and audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.benchmark_folder import (
    BenchmarkFolderError, find_qrels, from_trec_id, read_corpus, read_qrels, trec_id,
)


def _folder(root: Path, qrels: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    passages = [{"_id": "a b_0", "title": "A", "text": "alpha", "doc_id": "a b"}, {"_id": "c_0", "text": "gamma"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    queries = [{"_id": "q 1", "text": "what is alpha?", "mechanic": "chain"}, {"_id": "q2", "text": "gamma?"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    for name, text in qrels.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


TSV = "query-id\tcorpus-id\tscore\nq 1\ta b_0\t1\nq2\tc_0\t2\n"
TREC = f"{trec_id('q 1')} 0 {trec_id('a b_0')} 1\nq2 0 c_0 2\n"


@pytest.mark.parametrize("text", [TSV, TREC], ids=["tsv", "trec"])
def test_both_layouts_read_alike(tmp_path: Path, text: str) -> None:
    root = _folder(tmp_path / "b", {"qrels/test.tsv": text})
    assert read_qrels(find_qrels(root)) == {"q 1": {"a b_0": 1}, "q2": {"c_0": 2}}
    passages = read_corpus(root / "corpus.jsonl")
    assert [(p.chunk_id, p.doc_id) for p in passages] == [("a b_0", "a b"), ("c_0", None)]
    assert from_trec_id(trec_id("a b%c")) == "a b%c" and trec_id("plain_0") == "plain_0"


def test_eval_and_audit_read_the_same_judgements_and_take_a_split(tmp_path: Path) -> None:
    from factory.audit.inputs import load_audit_input
    from factory.evaluate import load_benchmark

    root = _folder(tmp_path / "b", {"qrels/dev.tsv": TREC, "qrels/train.tsv": "q2\tc_0\t1\n"})
    with pytest.raises(BenchmarkFolderError, match="several splits"):
        load_benchmark(root)
    bench = load_benchmark(root, split="dev")
    audit = load_audit_input(root, split="dev")
    assert bench.qrels == {"q 1": {"a b_0": 1}, "q2": {"c_0": 2}}
    assert {q.qid: q.support for q in audit.questions} == {"q 1": ["a b_0"], "q2": ["c_0"]}
    assert bench.unit_of("a b_0", "doc") == "a b" and [q.mechanic for q in bench.queries] == ["chain", ""]
    assert load_benchmark(root, split="train").qrels == {"q2": {"c_0": 1}}


def test_a_bad_line_names_the_file_and_line(tmp_path: Path) -> None:
    root = _folder(tmp_path / "b", {"qrels/test.tsv": TSV + "q2 c_0 1\n"})  # three columns, not tab separated
    with pytest.raises(BenchmarkFolderError, match=r"test\.tsv:4: expected query-id<TAB>corpus-id<TAB>score"):
        read_qrels(find_qrels(root))
    with open(root / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"_id": "c_0", "text": "again"}\n')
    with pytest.raises(BenchmarkFolderError, match=r"corpus\.jsonl:3: _id 'c_0' appears twice"):
        read_corpus(root / "corpus.jsonl")
