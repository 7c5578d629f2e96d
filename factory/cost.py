"""What a run's tasks cost: tokens per accepted task by stage, and how early rejections come.

The SQL lives in the store's views (migration 011: ``run_outcomes``, ``run_cost``); this
module only reads them, for the card, ``factory cost`` and ``bench/throughput.py``. A
task's price includes what the rejected candidates of its run spent: tokens per
accepted task are a run's tokens over its accepted tasks. Stages are the gateway's:
``facts`` (fact sheet), ``compose``, ``revise``, one per LLM validator
(``closed_book``, ``solvability``, ``necessity``, their ``*_judge``) and ``agent_run``
(the difficulty checker's agent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FIRST = ["facts", "compose", "revise"]
VALIDATORS = ["schema", "leakage", "shortcut", "closed_book", "solvability", "necessity", "agent_run"]  # gauntlet order
LABELS = {"facts": "fact sheet", "agent_run": "agent"}
SUMMED = ("calls", "requests", "tokens_in", "tokens_out", "thinking_tokens", "truncated")


@dataclass
class RunCost:
    run_id: str | None  # None: every run of the store together
    finished: int = 0
    accepted: int = 0
    rejected: int = 0
    rejected_before_agent: int = 0
    rejected_by: dict[str, int] = field(default_factory=dict)  # validator or stage -> rejected candidates
    stages: list[dict[str, Any]] = field(default_factory=list)
    total: dict[str, Any] = field(default_factory=dict)

    @property
    def rejected_before_agent_share(self) -> float | None:
        return self.rejected_before_agent / self.rejected if self.rejected else None

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "finished": self.finished, "accepted": self.accepted,
                "rejected": self.rejected, "rejected_before_agent": self.rejected_before_agent,
                "rejected_before_agent_share": self.rejected_before_agent_share, "rejected_by": self.rejected_by,
                "stages": self.stages,
                "total": self.total}


def stage_order(stage: str) -> tuple[int, str]:
    base = stage.removesuffix("_judge")
    if base in FIRST:
        return (FIRST.index(base), stage)
    if base in VALIDATORS:
        return (len(FIRST) + VALIDATORS.index(base), stage)
    return (len(FIRST) + len(VALIDATORS), stage)


def _per_accepted(row: dict[str, Any], accepted: int) -> dict[str, Any]:
    out = {k: int(row.get(k) or 0) for k in SUMMED}
    for name in ("tokens_in", "tokens_out", "thinking_tokens"):
        out[f"{name}_per_accepted"] = round(out[name] / accepted, 1) if accepted else None
    return out


def run_cost(store: Any, run_id: str | None = None) -> RunCost:
    """One run's cost (or, without ``run_id``, every run's together) from the views."""
    outcome = store.query(
        "SELECT coalesce(sum(finished), 0) AS finished, coalesce(sum(accepted), 0) AS accepted, "
        "coalesce(sum(rejected), 0) AS rejected, coalesce(sum(rejected_before_agent), 0) AS before_agent "
        "FROM run_outcomes WHERE (? IS NULL OR run_id = ?)", [run_id, run_id])[0]
    accepted = int(outcome["accepted"])
    rows = store.query(
        "SELECT stage, " + ", ".join(f"sum({k}) AS {k}" for k in SUMMED) + " FROM run_cost "
        "WHERE (? IS NULL OR run_id = ?) GROUP BY stage", [run_id, run_id])
    stages = [{"stage": r["stage"], "label": LABELS.get(r["stage"], r["stage"].replace("_", " ")),
               **_per_accepted(r, accepted)} for r in sorted(rows, key=lambda r: stage_order(r["stage"] or ""))]
    total = _per_accepted({k: sum(s[k] for s in stages) for k in SUMMED}, accepted)
    rejected_by = {r["rejected_by"]: int(r["n"]) for r in store.query(
        "SELECT rejected_by, sum(n) AS n FROM run_rejections WHERE (? IS NULL OR run_id = ?) "
        "GROUP BY rejected_by ORDER BY n DESC, rejected_by", [run_id, run_id])}
    return RunCost(run_id=run_id, finished=int(outcome["finished"]), accepted=accepted,
                   rejected=int(outcome["rejected"]), rejected_before_agent=int(outcome["before_agent"]),
                   rejected_by=rejected_by, stages=stages, total=total)
