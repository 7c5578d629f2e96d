"""The card's plots: one function per figure, plain data in, a PNG path out.

matplotlib runs headless (Agg) and every figure is closed after saving, so a long
build that exports repeatedly does not pile up figures in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

DPI = 110


def _save(fig: "plt.Figure", path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    # no timestamps in the file, so the same data gives the same bytes
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return path


def count_scale_max(top: float) -> float:
    """The top of a colour scale of counts: at least 1, since with nothing counted (an empty
    build) matplotlib would draw a scale from -0.1 to 0.1."""
    return max(1.0, float(top))


def coverage_heatmap(
    mechanics: Sequence[str],
    answer_types: Sequence[str],
    accepted: dict[tuple[str, str], int],
    attempted: dict[tuple[str, str], int],
    path: Path,
) -> Path:
    """Accepted tasks per mechanic x answer type; each cell also shows accepted/attempted."""
    grid = np.array([[accepted.get((m, t), 0) for t in answer_types] for m in mechanics], dtype=float)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * max(1, len(answer_types)), 1.2 + 0.6 * max(1, len(mechanics))))
    top = grid.max() if grid.size else 0
    image = ax.imshow(grid if grid.size else np.zeros((1, 1)), cmap="Blues", aspect="auto", vmin=0,
                      vmax=count_scale_max(top))
    ax.set_xticks(range(len(answer_types)), labels=list(answer_types), rotation=35, ha="right")
    ax.set_yticks(range(len(mechanics)), labels=list(mechanics))
    for i, mechanic in enumerate(mechanics):
        for j, answer_type in enumerate(answer_types):
            tried = attempted.get((mechanic, answer_type), 0)
            if not tried and not grid[i, j]:
                continue
            colour = "white" if top and grid[i, j] > top / 2 else "black"
            ax.text(j, i, f"{int(grid[i, j])}/{tried}", ha="center", va="center", fontsize=8, color=colour)
    ax.set_title("Taxonomy coverage: accepted / attempted")
    fig.colorbar(image, ax=ax, label="accepted tasks", ticks=MaxNLocator(integer=True))
    return _save(fig, path)


def validator_funnel(rows: Sequence[dict], path: Path) -> Path:
    """Per validator in gauntlet order: drafts seen, rejected, skipped."""
    names = [str(r["validator"]) for r in rows]
    seen = [int(r.get("seen") or 0) for r in rows]
    rejected = [int(r.get("rejected") or 0) for r in rows]
    skipped = [int(r.get("skipped") or 0) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 1.6 + 0.45 * max(1, len(names))))
    y = np.arange(len(names))
    ax.barh(y, seen, color="#9ecae1", label="seen")
    ax.barh(y, rejected, color="#de2d26", label="rejected")
    if any(skipped):
        ax.barh(y, skipped, left=seen, color="#d9d9d9", label="skipped")
    for i, (s, r) in enumerate(zip(seen, rejected)):
        ax.text(s, i, f"  {r}/{s}", va="center", fontsize=8)
    ax.set_yticks(y, labels=names)
    ax.invert_yaxis()
    ax.set_xlim(0, max([s + k for s, k in zip(seen, skipped)] or [1]) * 1.18 + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Validator funnel: drafts rejected/seen", loc="left", fontsize=10)
    if names:  # in the title's band, right: never over the bars or the tick labels
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=8, frameon=False)
    if not names:
        ax.text(0.5, 0.5, "no verdicts recorded", ha="center", va="center", transform=ax.transAxes)
    return _save(fig, path)


def histogram(values: Sequence[float], title: str, xlabel: str, path: Path, *, integer: bool = False) -> Path:
    fig, ax = plt.subplots(figsize=(5, 3.2))
    data = [float(v) for v in values]
    if data:
        if integer:
            low, high = int(min(data)), int(max(data))
            bins = np.arange(low - 0.5, high + 1.5, 1.0)
        else:
            bins = min(20, max(5, len(set(data))))
        ax.hist(data, bins=bins, color="#3182bd", edgecolor="white")
        if integer:
            ax.set_xticks(range(int(min(data)), int(max(data)) + 1))
    else:
        ax.text(0.5, 0.5, "no accepted tasks", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("tasks")
    return _save(fig, path)
