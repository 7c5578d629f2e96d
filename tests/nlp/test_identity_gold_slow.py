"""The identity goals on the gold sets: ingest the documents a gold set names (the same
``ingest`` as `factory ingest`), read ``mention_identities``, score (slow: NER on ~850
Russian news and ~1,100 English leads).

Goals (issue 22): at least 40 % of same-entity mention pairs share an identity, at most
5 % of identities are shared by different entities. Ingesting only the named documents
is faithful: for ru-wikinews they are 856 of its 933 documents and the figures equal the
whole corpus's; for en-wiki-vital (1,100 of 10,033) fewer competing full names make the
subset's pair recall read about 0.02 higher than the whole corpus's, with no shared
identity in either (measured when the gold sets were written; see the issue note).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.ingest import ingest
from factory.nlp.identity_eval import load_gold, score_identities
from factory.settings import Settings
from factory.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPORA = {"ru": "ru-wikinews", "en": "en-wiki-vital"}
# namesakes that keys alone cannot tell apart (one surface form, two entities) may share an
# identity; every other apart pair must stay apart
KEPT_APART_AT_LEAST = {"ru": 26, "en": 15}


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(CORPORA))
def test_identity_goals_on_the_gold_set(lang: str, tmp_path, shared_corpora) -> None:
    gold = load_gold(FIXTURES / f"identity_gold_{lang}.jsonl")
    wanted = set(gold.doc_ids())
    corpus = tmp_path / "docs.jsonl"
    with (shared_corpora / CORPORA[lang] / "docs.jsonl").open(encoding="utf-8") as source, \
            corpus.open("w", encoding="utf-8") as out:
        for line in source:
            if json.loads(line)["id"] in wanted:
                out.write(line)
    store = Store(tmp_path / "store")
    ingest(corpus, store, lang, Settings(nlp={"n_process": 2}))

    figures = score_identities(store, gold)
    assert figures["coverage"] == 1.0, "NER no longer finds every gold mention (spans changed)"
    assert figures["pair_recall"] >= 0.40 and figures["all_mentions"]["pair_recall"] >= 0.40, figures
    assert figures["shared_identity_share"] <= 0.05, figures["shared_identities"]
    assert figures["apart_kept"] >= KEPT_APART_AT_LEAST[lang], figures["apart_violations"]
    # and today's keys alone (entity_key as identity) do worse: the linking is what helps
    keys_only = score_identities(store, gold, column="entity_key")
    assert figures["pair_recall"] > keys_only["pair_recall"] + 0.2
