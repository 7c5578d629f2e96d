"""The datamix: balance the SFT samples to target shares along several features at once.

Features of a sample: its round number, how the round ended (save, finalize, or cut:
the round ran out of turns, budget or tool calls), the task's difficulty, its mechanic,
and how much of the gold support the round started with (none, partial, complete).

Iterative proportional fitting (raking) finds one weight per sample such that the
weighted share of every category meets its target on every feature at once; the
weights become keep-probabilities (downsampling; above 1 a sample is copied, up to
``mix_max_copies``, and the copies are flagged), and a seeded systematic draw over the
samples sorted by their features turns them into whole counts with little noise. The
report gives each feature's distribution before and after, and the total variation
distance to its target (half the L1 distance between the share vectors).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from factory.settings import TrainingSettings
from factory.training.tasks import TrainingError

FEATURES = {
    "round": lambda s: str(s["round_no"]),
    "ending_action": lambda s: s["ending_action"],
    "difficulty": lambda s: s["difficulty"],
    "mechanic": lambda s: s["mechanic"],
    "completeness": lambda s: s["completeness"],
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DimensionReport(_Model):
    dimension: str
    target: dict[str, float]
    before: dict[str, int]
    after: dict[str, int]
    tv_before: float
    tv_after: float
    unreachable: list[str] = Field(default_factory=list, description="target categories no sample has")


class MixReport(_Model):
    lang: str
    seed: int
    samples_before: int
    samples_after: int
    distinct_after: int
    upsampled: int = Field(0, description="extra copies made")
    tv_before: float = Field(description="mean over the dimensions")
    tv_after: float
    dimensions: list[DimensionReport] = Field(default_factory=list)


def feature_values(samples: list[dict[str, Any]], dims: list[str]) -> list[list[str]]:
    unknown = [d for d in dims if d not in FEATURES]
    if unknown:
        raise TrainingError(f"unknown datamix dimension {unknown[0]!r}; known: {', '.join(FEATURES)}")
    return [[str(FEATURES[d](s)) for d in dims] for s in samples]


def targets_for(values: list[list[str]], dims: list[str], configured: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Configured shares (normalised), or uniform over the observed categories."""
    out = {}
    for j, dim in enumerate(dims):
        given = configured.get(dim)
        if given:
            if any(v < 0 for v in given.values()) or sum(given.values()) <= 0:
                raise TrainingError(f"training.mix_targets.{dim}: shares must be non-negative with a positive sum")
            total = sum(given.values())
            out[dim] = {str(k): v / total for k, v in given.items()}
        else:
            cats = sorted({row[j] for row in values})
            out[dim] = {c: 1 / len(cats) for c in cats} if cats else {}
    return out


def tv_distance(counts: Counter, target: dict[str, float]) -> float:
    total = sum(counts.values())
    if total == 0:
        return 0.0
    cats = set(counts) | set(target)
    return 0.5 * sum(abs(counts.get(c, 0) / total - target.get(c, 0.0)) for c in cats)


def rake(values: list[list[str]], dims: list[str], targets: dict[str, dict[str, float]], iterations: int) -> np.ndarray:
    """Weights (mean 1 over the kept samples) matching every reachable target share."""
    n = len(values)
    w = np.ones(n)
    codes = []
    for j, dim in enumerate(dims):
        present = sorted({row[j] for row in values})
        reach = {c: targets[dim].get(c, 0.0) for c in present}
        total = sum(reach.values())
        shares = {c: (v / total if total > 0 else 1 / len(present)) for c, v in reach.items()}
        index = {c: i for i, c in enumerate(present)}
        codes.append((np.array([index[row[j]] for row in values]), np.array([shares[c] for c in present])))
    for _ in range(iterations):
        worst = 0.0
        for code, share in codes:
            sums = np.bincount(code, weights=w, minlength=len(share))
            total = sums.sum()
            if total <= 0:
                return w
            current = sums / total
            worst = max(worst, float(np.abs(current - share).max()))
            factor = np.divide(share * total, sums, out=np.zeros_like(sums), where=sums > 0)
            w = w * factor[code]
        if worst < 1e-9:
            break
    mean = w.mean()
    return w / mean if mean > 0 else w


def keep_probabilities(w: np.ndarray, size: int | None, max_copies: int) -> np.ndarray:
    """Expected copies per sample: proportional to the weights, at most ``max_copies``."""
    if w.size == 0 or w.max() <= 0:
        return np.zeros_like(w)
    if size is None:
        if max_copies == 1:
            return w / w.max()
        size = int(w.size)
    # the scale at which sum(min(scale * w, max_copies)) == size (bisection; the sum grows with the scale)
    lo, hi = 0.0, max_copies / w[w > 0].min()
    if np.minimum(hi * w, max_copies).sum() <= size:
        return np.minimum(hi * w, max_copies)
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.minimum(mid * w, max_copies).sum() < size:
            lo = mid
        else:
            hi = mid
    return np.minimum(hi * w, max_copies)


def systematic_counts(p: np.ndarray, order: list[int], rng: random.Random) -> np.ndarray:
    counts = np.zeros(p.size, dtype=int)
    u = rng.random()
    cumulative = 0.0
    for i in order:
        before = math.floor(cumulative + u)
        cumulative += float(p[i])
        counts[i] = math.floor(cumulative + u + 1e-12) - before
    return counts


def mix(samples: list[dict[str, Any]], settings: TrainingSettings, *, seed: int, lang: str = "") -> tuple[list[dict[str, Any]], MixReport]:
    """The balanced samples (copies flagged) and the report."""
    dims = list(settings.mix_dimensions)
    values = feature_values(samples, dims)
    targets = targets_for(values, dims, settings.mix_targets)
    rng = random.Random(f"datamix:{seed}:{lang}")
    if samples:
        w = rake(values, dims, targets, settings.mix_iterations)
        p = keep_probabilities(w, settings.mix_size, settings.mix_max_copies)
        tie = [rng.random() for _ in samples]
        order = sorted(range(len(samples)), key=lambda i: (values[i], tie[i]))
        counts = systematic_counts(p, order, rng)
    else:
        counts = np.zeros(0, dtype=int)
    mixed = []
    for i, sample in enumerate(samples):
        for copy in range(int(counts[i])):
            mixed.append({**sample, "copy": copy, "upsampled": copy > 0})
    reports = []
    for j, dim in enumerate(dims):
        before = Counter(row[j] for row in values)
        after = Counter()
        for i, row in enumerate(values):
            if counts[i]:
                after[row[j]] += int(counts[i])
        reports.append(DimensionReport(
            dimension=dim, target={k: round(v, 4) for k, v in targets[dim].items()},
            before=dict(sorted(before.items())), after=dict(sorted(after.items())),
            tv_before=round(tv_distance(before, targets[dim]), 4), tv_after=round(tv_distance(after, targets[dim]), 4),
            unreachable=sorted(c for c, v in targets[dim].items() if v > 0 and c not in before),
        ))
    n_dims = max(1, len(reports))
    report = MixReport(
        lang=lang, seed=seed, samples_before=len(samples), samples_after=len(mixed),
        distinct_after=int((counts > 0).sum()), upsampled=int(np.maximum(counts - 1, 0).sum()),
        tv_before=round(sum(r.tv_before for r in reports) / n_dims, 4),
        tv_after=round(sum(r.tv_after for r in reports) / n_dims, 4),
        dimensions=reports,
    )
    return mixed, report
