"""Acceptance: on single-hop sets (one passage answers each question) the shortcut flags >= 90%.

The sets are built at test time from the shared corpora by the committed script
corpora/audit/make_single_hop.py (120 questions per language; 2,000 English documents,
all 933 Russian ones). The shortcut check runs with BM25 only, to keep the test short:
a question flagged by BM25 is flagged by the full check too (it flags when any of
BM25, dense or hybrid finds the answer passage), so the share here is a lower bound.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from factory.audit import run_audit
from factory.settings import Settings

SCRIPT = Path(__file__).resolve().parents[2] / "corpora" / "audit" / "make_single_hop.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_single_hop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_shortcut_flags_single_hop_sets(lang, shared_corpora, tmp_path):
    made = _script().build_single_hop(lang, shared_corpora, tmp_path / "bench", n_questions=120, n_docs=2000)
    assert made["questions"] == 120 and made["chunks"] > 1000

    # each question is answered by one passage that holds its answer as written
    corpus = {json.loads(l)["_id"]: json.loads(l) for l in (tmp_path / "bench" / "corpus.jsonl").open(encoding="utf-8")}
    qrels = [l.split("\t") for l in (tmp_path / "bench" / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    gold = {q: c for q, c, _ in qrels}
    assert len(gold) == len(qrels) == 120
    for line in (tmp_path / "bench" / "queries.jsonl").open(encoding="utf-8"):
        query = json.loads(line)
        assert query["answer"] in corpus[gold[query["_id"]]]["text"]
        assert query["answer"].casefold() not in query["text"].casefold()

    settings = Settings(validation={"shortcut_searchers": ["bm25"]})
    result = run_audit(tmp_path / "bench", tmp_path / "out", settings, lang=lang, dense="none",
                       validators=["schema", "leakage", "shortcut"])
    shortcut = result.summary["per_validator"]["shortcut"]
    print(json.dumps({"lang": lang, "shortcut": shortcut, "overall": result.summary["overall"],
                      "broad_query_recall": result.summary["broad_query_recall"]}, ensure_ascii=False))
    assert shortcut["ran"] == 120
    assert shortcut["share_flagged"] >= 0.9
    assert result.summary["per_validator"]["schema"]["flagged"] == 0
