"""Card plots: a build that accepted nothing still gets a sane colour scale."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from factory.card import plots


def test_count_scale_max_is_at_least_one() -> None:
    assert plots.count_scale_max(0) == 1.0
    assert plots.count_scale_max(7) == 7.0


def test_coverage_heatmap_with_nothing_accepted_scales_from_0_to_1(tmp_path: Path, monkeypatch) -> None:
    limits = []
    real_save = plots._save

    def keep_limits(fig, path):
        limits.append(fig.axes[0].images[0].get_clim())
        return real_save(fig, path)

    monkeypatch.setattr(plots, "_save", keep_limits)
    path = plots.coverage_heatmap(["chain", "comparison"], ["person", "date"], {}, {("chain", "person"): 3},
                                  tmp_path / "coverage.png")
    assert path.is_file() and limits == [(0.0, 1.0)]
    plt.close("all")
