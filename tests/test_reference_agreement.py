"""The writers' label measured: the blind sample is what its key says, kappa is Cohen's, and
the recorded labels give the agreement the README and the notes report."""

from __future__ import annotations

import json

import pytest

from bench.acceptance import fixture
from bench.reference_agreement import GROUPS, _key_path, agreement, kappa, sample
from factory.reference.records import read_reference


def test_kappa_is_cohens() -> None:
    assert kappa([True, False, True, False], [True, False, True, False]) == 1.0
    assert kappa([True, True, False, False], [True, False, True, False]) == 0.0
    # 20 items: 10/10 against 2/18 with 12 agreeing: chance 0.5, observed 0.6
    x = [True] * 10 + [False] * 10
    y = [True, True] + [False] * 18
    assert kappa(x, y) == 0.2
    assert kappa([True, True], [True, True]) is None  # no variation: kappa is undefined


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_blind_sample_is_the_keyed_subgraphs_half_of_each_label(lang: str) -> None:
    key = json.loads(_key_path(lang).read_text(encoding="utf-8"))
    assert [row["index"] for row in key] == list(range(1, len(key) + 1))
    assert sum(row["status"] == "drafted" for row in key) == len(key) // 2
    groups = {g: read_reference(fixture(lang, f"agree-{g}")) for g in GROUPS}
    for row in key:
        source = {c.index: c for c in read_reference(fixture(lang, row["set"]))}
        original = source[row["source_index"]]
        assert original.status == row["status"]
        for g in GROUPS:
            blind = groups[g][row["index"] - 1]
            assert blind.index == row["index"] and blind.subgraph == original.subgraph
    # the draw is reproducible: the same sets and seed give the same sample
    _, again = sample(lang, ["main", *[f"draw{i}" for i in (1, 2, 3, 5, 6, 7, 8, 9, 10)]], len(key), 7)
    assert again == key


# measured on the recorded labels (bench.reference_agreement score): the two new groups agree
# with each other far more than with the writers of the draws, and find few honest questions
MEASURED = {"en": {"honest": {"original": 10, "a": 2, "b": 1}, "a~b": 19, "original~a": 12, "original~b": 11},
            "ru": {"honest": {"original": 10, "a": 3, "b": 3}, "a~b": 18, "original~a": 9, "original~b": 11}}


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_recorded_labels_give_the_reported_agreement(lang: str) -> None:
    got = agreement(lang)
    assert got["n"] == 20
    assert got["honest"] == MEASURED[lang]["honest"]
    for pair in ("a~b", "original~a", "original~b"):
        assert got["pairs"][pair]["agree"] == MEASURED[lang][pair]
