"""Reciprocal rank fusion of several rollouts' rankings."""

from __future__ import annotations

from typing import Sequence

from factory.agent.trace import RankedChunk


def reciprocal_rank_fusion(rankings: Sequence[Sequence[RankedChunk]], *, k: int = 60, cut: int = 10) -> list[RankedChunk]:
    """score(c) = sum over rankings of 1 / (k + rank); score descending, then chunk id.

    A chunk keeps the reason it was given where it ranked best. The tie-break is the
    one run files use, so the fused list and its run file agree line for line.
    """
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, str]] = {}
    for ranking in rankings:
        seen: set[str] = set()
        rank = 0
        for item in ranking:
            if item.chunk_id in seen:  # a ranking counts each chunk once
                continue
            seen.add(item.chunk_id)
            rank += 1
            scores[item.chunk_id] = scores.get(item.chunk_id, 0.0) + 1.0 / (k + rank)
            if item.chunk_id not in best or rank < best[item.chunk_id][0]:
                best[item.chunk_id] = (rank, item.reason)
    # rounded: the same sum added in another order must tie, not differ in the last bit
    order = sorted(scores, key=lambda c: (-round(scores[c], 12), c))
    return [RankedChunk(chunk_id=c, reason=best[c][1], score=scores[c]) for c in order[:cut]]
