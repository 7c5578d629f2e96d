"""The datamix: balance the SFT samples to target shares along several features at once.

Features of a sample: its round number, how the round ended (save, finalize, or cut:
the round ran out of turns, budget or tool calls), the task's difficulty, its mechanic,
and how much of the gold support the round started with (none, partial, complete).

Iterative proportional fitting (raking) finds one weight per sample such that the
weighted share of every category meets its target on every feature at once; scaled to
at most one copy each (downsampling; with ``mix_max_copies`` above 1 a sample may be
copied, and copies are flagged), the weights give the expected size of the balanced
subset. Whole samples are then drawn greedily, one at a time, into the feature cell
that brings the counts closest to the targets (ties by the raking's preference, then by
a seeded lot). Without ``mix_size``, the subset grows beyond the fully raked size as
long as its distance stays within ``mix_tolerance`` of the best size's. The report gives each
feature's distribution before and after, and the total variation distance to its
target (half the L1 distance between the share vectors).
"""

from __future__ import annotations

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
    stray = sorted(set(configured) - set(FEATURES))
    if stray:
        raise TrainingError(f"training.mix_targets.{stray[0]}: no such dimension; known: {', '.join(FEATURES)}")
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


def _codes(values: list[list[str]], dims: list[str], targets: dict[str, dict[str, float]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per dimension: each sample's category index, and the reachable target shares (over present categories)."""
    codes = []
    for j, dim in enumerate(dims):
        present = sorted({row[j] for row in values})
        reach = {c: targets[dim].get(c, 0.0) for c in present}
        total = sum(reach.values())
        shares = {c: (v / total if total > 0 else 1 / len(present)) for c, v in reach.items()}
        index = {c: i for i, c in enumerate(present)}
        codes.append((np.array([index[row[j]] for row in values]), np.array([shares[c] for c in present])))
    return codes


def _fit(w: np.ndarray, codes: list[tuple[np.ndarray, np.ndarray]], iterations: int) -> np.ndarray:
    """Raking passes: scale each category's weights to its share."""
    for _ in range(iterations):
        worst = 0.0
        for code, share in codes:
            sums = np.bincount(code, weights=w, minlength=len(share))
            total = sums.sum()
            if total <= 0:
                return w
            worst = max(worst, float(np.abs(sums / total - share).max()))
            factor = np.divide(share * total, sums, out=np.zeros_like(sums), where=sums > 0)
            w = w * factor[code]
        if worst < 1e-9:
            break
    return w


def keep_probabilities(w: np.ndarray, size: int | None, max_copies: int) -> np.ndarray:
    """Expected copies per sample: proportional to the weights, at most ``max_copies``."""
    if w.size == 0 or w.max() <= 0:
        return np.zeros_like(w)
    if size is None:
        if max_copies == 1:
            return w / w.max()
        size = int(w.size)
    # the scale at which sum(min(scale * w, max_copies)) == size: cap the k heaviest, scale the rest
    order = np.sort(w)[::-1]
    tail = np.cumsum(order[::-1])[::-1]  # tail[k] = sum of order[k:]
    for k in range(order.size):
        if tail[k] <= 0:
            break
        scale = (size - k * max_copies) / tail[k]
        if scale * order[k] <= max_copies:
            return np.minimum(scale * w, max_copies)
    return np.where(w > 0, float(max_copies), 0.0)  # even all at the cap fall short of the size


def greedy_counts(values: list[list[str]], codes: list[tuple[np.ndarray, np.ndarray]], p: np.ndarray,
                  total: int, max_copies: int, rng: random.Random) -> np.ndarray:
    """Whole copies per sample, ``total`` in all, filled one at a time into the feature cell that
    brings the counts closest to ``total`` x the target shares (summed L1 over the dimensions).

    Samples with the same features form a cell and are interchangeable for the mix; ties go to
    the cell with the most unused expected copies ``p`` (the raking's preference), then by lot.
    """
    cells: dict[tuple[str, ...], list[int]] = {}
    for i, row in enumerate(values):
        cells.setdefault(tuple(row), []).append(i)
    keys = sorted(cells)
    members = [cells[k] for k in keys]
    for group in members:
        rng.shuffle(group)
    cell_codes = np.array([[code[group[0]] for code, _ in codes] for group in members], dtype=int)
    capacity = np.array([len(g) * max_copies for g in members], dtype=float)
    for d, (_, share) in enumerate(codes):
        capacity[share[cell_codes[:, d]] <= 0] = 0  # a category targeted at 0 is never drawn
    mass = np.array([float(p[g].sum()) for g in members])
    jitter = np.array([rng.random() for _ in members])
    taken = np.zeros(len(members))
    counts_by_dim = [np.zeros(len(share)) for _, share in codes]
    wanted = [share * total for _, share in codes]
    for _ in range(int(total)):
        open_cells = taken < capacity
        if not open_cells.any():
            break
        delta = np.zeros(len(members))
        for d, (n, tau) in enumerate(zip(counts_by_dim, wanted)):
            delta += (np.abs(n + 1 - tau) - np.abs(n - tau))[cell_codes[:, d]]
        delta = np.where(open_cells, np.round(delta, 9), np.inf)
        pick = int(np.lexsort((jitter, -(mass - taken), delta))[0])
        taken[pick] += 1
        for d in range(len(codes)):
            counts_by_dim[d][cell_codes[pick, d]] += 1
    counts = np.zeros(len(values), dtype=int)
    for group, n in zip(members, taken.astype(int)):
        for j in range(n):  # every member once before any gets a copy
            counts[group[j % len(group)]] += 1
    return counts


def _best_size(draw: Any, n: int, raked: int, tolerance: float, distance: Any) -> int:
    """The largest subset size whose distance is within ``tolerance`` of the best size's.

    Sizes on a geometric grid from 1 to ``n`` (plus the fully raked size) are tried, then
    the gap above the largest good one is bisected. Small sizes cannot meet shares in
    whole samples and large ones keep the skew, so the distance dips in between.
    """
    grid = sorted({raked, n, *(max(1, round(n ** (k / 16))) for k in range(17))})
    tried = {size: distance(draw(size)) for size in grid}
    limit = min(tried.values()) + tolerance
    lo = max(size for size in grid if tried[size] <= limit)
    above = [size for size in grid if size > lo]
    hi = above[0] - 1 if above else lo
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if distance(draw(mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _mean_tv(counts: np.ndarray, values: list[list[str]], dims: list[str], targets: dict[str, dict[str, float]]) -> float:
    total = 0.0
    for j, dim in enumerate(dims):
        tally: Counter = Counter()
        for i, row in enumerate(values):
            if counts[i]:
                tally[row[j]] += int(counts[i])
        total += tv_distance(tally, targets[dim])
    return total / max(1, len(dims))


def mix(samples: list[dict[str, Any]], settings: TrainingSettings, *, seed: int, lang: str = "") -> tuple[list[dict[str, Any]], MixReport]:
    """The balanced samples (copies flagged) and the report."""
    dims = list(settings.mix_dimensions)
    values = feature_values(samples, dims)
    targets = targets_for(values, dims, settings.mix_targets)
    rng = random.Random(f"datamix:{seed}:{lang}")
    if samples:
        codes = _codes(values, dims, targets)
        p = keep_probabilities(_fit(np.ones(len(samples)), codes, settings.mix_iterations), settings.mix_size,
                               settings.mix_max_copies)
        total = max(1, int(round(float(p.sum()))))
        state = rng.getstate()

        def draw(size: int) -> np.ndarray:
            rng.setstate(state)  # the same lots for every size tried
            return greedy_counts(values, codes, p, size, settings.mix_max_copies, rng)

        if settings.mix_size is not None:
            counts = draw(total)
        else:
            counts = draw(_best_size(draw, len(samples), total, settings.mix_tolerance,
                                     lambda c: _mean_tv(c, values, dims, targets)))
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
