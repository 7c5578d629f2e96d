"""The datamix: balanced to targets (TV distance halved at least), seeded, copies flagged."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from factory.settings import TrainingSettings
from factory.training.datamix import keep_probabilities, mix, tv_distance
from factory.training.tasks import TrainingError


def skewed_samples(n: int = 400, seed: int = 5) -> list[dict]:
    """Round-sliced samples as a weak teacher makes them: mostly round 1, mostly saves, one mechanic."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        round_no = rng.choices([1, 2, 3, 4, 5], [0.5, 0.25, 0.12, 0.08, 0.05])[0]
        ending = "finalize" if round_no == 5 else rng.choices(["save", "finalize", "cut"], [0.7, 0.2, 0.1])[0]
        out.append({
            "sample_id": f"s{i}", "round_no": round_no, "ending_action": ending,
            "difficulty": rng.choices(["easy", "medium", "hard"], [0.6, 0.3, 0.1])[0],
            "mechanic": rng.choices(["chain", "bridge", "comparison"], [0.7, 0.2, 0.1])[0],
            "completeness": rng.choices(["none", "partial", "complete"], [0.5, 0.35, 0.15])[0],
        })
    return out


def test_tv_distance():
    assert tv_distance(Counter({"a": 3, "b": 1}), {"a": 0.5, "b": 0.5}) == pytest.approx(0.25)
    assert tv_distance(Counter({"a": 1}), {"a": 0.5, "b": 0.5}) == pytest.approx(0.5)
    assert tv_distance(Counter({"a": 2, "b": 2}), {"a": 0.5, "b": 0.5}) == 0


def test_uniform_targets_halve_the_distance_at_least():
    samples = skewed_samples()
    mixed, report = mix(samples, TrainingSettings(), seed=13, lang="en")
    assert report.samples_before == 400 and report.samples_after == len(mixed) > 0
    assert report.tv_before > 0.2
    assert report.tv_after <= report.tv_before / 2
    for dim in report.dimensions:
        assert dim.tv_after <= dim.tv_before + 1e-9
        assert sum(dim.before.values()) == 400 and sum(dim.after.values()) == len(mixed)
    # downsampling only by default: each sample at most once
    assert len({s["sample_id"] for s in mixed}) == len(mixed) and not any(s["upsampled"] for s in mixed)
    # the reported distributions are the output's
    rounds = Counter(str(s["round_no"]) for s in mixed)
    assert next(d for d in report.dimensions if d.dimension == "round").after == dict(sorted(rounds.items()))


def test_configured_targets_are_met():
    targets = {"ending_action": {"save": 0.5, "finalize": 0.5, "cut": 0.0}}
    strict = TrainingSettings(mix_targets=targets, mix_dimensions=["ending_action"], mix_tolerance=0.0)
    mixed, report = mix(skewed_samples(), strict, seed=1)
    endings = Counter(s["ending_action"] for s in mixed)
    assert endings["cut"] == 0  # a category targeted at 0 is never drawn
    assert abs(endings["save"] - endings["finalize"]) <= 1
    assert report.dimensions[0].tv_after < 0.01
    # the default tolerance trades a little distance for more samples
    loose, loose_report = mix(skewed_samples(), strict.model_copy(update={"mix_tolerance": 0.05}), seed=1)
    assert len(loose) > len(mixed) and loose_report.tv_after <= 0.05 + report.tv_after + 1e-9
    assert not any(s["ending_action"] == "cut" for s in loose)


def test_seeded_and_deterministic():
    samples = skewed_samples()
    a, _ = mix(samples, TrainingSettings(), seed=7, lang="en")
    b, _ = mix(samples, TrainingSettings(), seed=7, lang="en")
    c, _ = mix(samples, TrainingSettings(), seed=8, lang="en")
    ids = lambda xs: [s["sample_id"] for s in xs]  # noqa: E731
    assert ids(a) == ids(b)
    assert ids(a) != ids(c)


def test_upsampling_is_flagged_and_bounded():
    samples = skewed_samples(200)
    settings = TrainingSettings(mix_size=300, mix_max_copies=5)  # 3 cannot lift 5% of 200 to a 20% share of 300
    mixed, report = mix(samples, settings, seed=3)
    assert report.samples_after == len(mixed) == 300
    copies = Counter(s["sample_id"] for s in mixed)
    assert max(copies.values()) <= 5
    flagged = [s for s in mixed if s["upsampled"]]
    assert len(flagged) == report.upsampled == sum(n - 1 for n in copies.values()) > 0
    assert all(s["copy"] > 0 for s in flagged)
    assert report.tv_after <= report.tv_before / 2


def test_keep_probabilities_respect_size_and_cap():
    import numpy as np

    w = np.array([1.0, 1.0, 4.0, 0.5])
    p = keep_probabilities(w, None, 1)
    assert p.max() == 1.0 and p[2] == 1.0
    p = keep_probabilities(w, 5, 2)
    assert p.sum() == pytest.approx(5, abs=1e-6) and p.max() <= 2


def test_unknown_dimension_and_bad_targets():
    with pytest.raises(TrainingError, match="unknown datamix dimension 'colour'"):
        mix(skewed_samples(10), TrainingSettings(mix_dimensions=["colour"]), seed=1)
    with pytest.raises(TrainingError, match="mix_targets.rounds: no such dimension"):
        mix(skewed_samples(10), TrainingSettings(mix_targets={"rounds": {"1": 1.0}}), seed=1)
    with pytest.raises(TrainingError, match="mix_targets.round"):
        mix(skewed_samples(10), TrainingSettings(mix_targets={"round": {"1": -1.0}}), seed=1)


def test_empty_input():
    mixed, report = mix([], TrainingSettings(), seed=1)
    assert mixed == [] and report.samples_after == 0 and report.tv_before == report.tv_after == 0
