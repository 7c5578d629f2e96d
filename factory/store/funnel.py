"""The funnel of a run (or of every run in the store): what each validator did, how candidates ended.

Read from the views of migration 009 (``run_funnel``, ``run_outcomes``,
``run_rejections``, and ``funnel`` for all runs), so ``factory funnel``, the summaries
of ``factory generate`` and ``factory build-benchmark``, the live build view, the
export and the card show the same figures, also while a run is writing.
"""

from __future__ import annotations

from typing import Any

_FUNNEL_COLUMNS = "validator, step, seen, rejected, skipped, mean_s, candidates_rejected"


def validator_funnel(store: Any, run_id: str | None = None, order: list[str] | None = None) -> list[dict[str, Any]]:
    """Per validator in gauntlet order: drafts seen, rejected, skipped, mean seconds.

    ``order``: the validators of the gauntlet, so those no draft reached get a row of zeros
    (the funnel shows where drafts stopped).
    """
    if run_id is None:
        rows = store.query(f"SELECT {_FUNNEL_COLUMNS} FROM funnel")
    else:
        rows = store.query(f"SELECT {_FUNNEL_COLUMNS} FROM run_funnel WHERE run_id = ?", [run_id])
    present = {r["validator"] for r in rows}
    for step, name in enumerate(order or []):
        if name not in present:
            rows.append({"validator": name, "step": step, "seen": 0, "rejected": 0, "skipped": 0, "mean_s": None,
                         "candidates_rejected": 0})
    # the gauntlet's order ranks the rows: a stored step is where the validator ran in its
    # draft's gauntlet, which differs from the order's position when an earlier one was skipped
    rank = {name: i for i, name in enumerate(order or [])}
    return sorted(rows, key=lambda r: (rank.get(r["validator"], len(rank)), r["step"], r["validator"]))


def candidate_outcomes(store: Any, run_id: str | None = None) -> dict[str, Any]:
    """How the candidates ended: counts, acceptance, revisions, tokens, and where rejects stopped."""
    where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
    totals = store.query(
        "SELECT coalesce(sum(accepted), 0) AS accepted, coalesce(sum(rejected), 0) AS rejected, "
        "coalesce(sum(running), 0) AS running, coalesce(sum(revisions), 0) AS revisions, "
        f"coalesce(sum(accepted_revisions), 0) AS accepted_revisions, coalesce(sum(tokens), 0) AS tokens "
        f"FROM run_outcomes {where}", params)[0]
    totals = {key: int(value) for key, value in totals.items()}
    rejections = store.query(
        f"SELECT rejected_by AS what, stage, sum(n)::BIGINT AS n FROM run_rejections {where} GROUP BY ALL "
        "ORDER BY n DESC, what, stage", params)
    finished = totals["accepted"] + totals["rejected"]
    accepted = totals["accepted"]
    by: dict[str, int] = {}
    for row in rejections:
        by[row["what"]] = by.get(row["what"], 0) + int(row["n"])
    return {
        **totals,
        "candidates": finished,
        "acceptance_rate": round(accepted / finished, 4) if finished else 0.0,
        "revisions_per_accepted": round(totals["accepted_revisions"] / accepted, 3) if accepted else None,
        "rejected_by": by,
        "rejected_outside_gauntlet": [r for r in rejections if r["stage"] != "gauntlet"],
    }


def funnel_summary(store: Any, run_id: str | None = None, order: list[str] | None = None) -> dict[str, Any]:
    """The validator funnel and the candidates' outcomes together (``factory funnel --json``)."""
    return {"validators": validator_funnel(store, run_id, order), **candidate_outcomes(store, run_id)}
