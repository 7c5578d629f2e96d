"""The gauntlet against the strong-writer reference set, on the shared corpora (BM25).

The model-free validators (schema, answerable, leakage, shortcut) judge every reference
candidate's drafts as the loop would; adversarial drafts made from the same set must be
refused. See bench/acceptance.py for the full report (with --dense, dense and hybrid too).

What is guarded, and why these floors (measured figures are in the issue note and README):
* of the candidates with an honest first draft, at least 80% are accepted within two
  revisions: the gauntlet keeps what a strong composer writes once it answers the feedback;
* single-hop template questions and leaky multi-hop drafts are refused at least 95%, and
  planted defects in the accepted drafts are caught at least 95%.
The issue's goals over all candidates (60% within two revisions, 30% on the first draft)
are not met on these corpora: about half of the subgraphs the selectors draw admit no
honest question (the writers' reasons are in the fixtures), and the writers' first drafts
retold their hidden passages; both are reported, not hidden behind a lower floor here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, shared_corpora: Path) -> Path:
    return tmp_path_factory.mktemp("acceptance")


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_gauntlet_keeps_the_honest_reference_drafts_and_refuses_the_adversarial_ones(lang: str, work: Path) -> None:
    from bench.acceptance import adversarial, judge_reference, prepare, single_hop

    store, index, settings = prepare(lang, work)
    judged = judge_reference(lang, store, index, settings)
    drafted = [j for j in judged if j.status == "drafted"]
    assert len(judged) >= 40 and {j.cell.split("/")[0] for j in judged} == {
        "chain", "intersection", "temporal", "comparison", "calculation"}
    kept = sum(j.within(2) for j in drafted)
    assert kept / len(drafted) >= 0.8, [(j.index, j.reason) for j in drafted if not j.within(2)]
    assert all(j.accepted_at is None or j.status == "drafted" for j in judged)

    refused = single_hop(lang, store, index, settings)
    assert refused["n"] >= 100 and refused["share"] >= 0.95, refused
    made = adversarial(lang, judged, store, index, settings)
    assert made["leaky"]["n"] >= 20 and made["leaky"]["share"] >= 0.95, made["leaky"]
    assert made["planted"]["n"] >= 9 and made["planted"]["share"] >= 0.95, made["planted"]
