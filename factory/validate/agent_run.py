"""Agent run: the search agent tries the draft on the fixed index; too easy goes back.

On by default (``validation.agent_run``). Turned off, or without a fixed index to search,
the verdict says 'skipped' with the reason: never a pass.
"""

from __future__ import annotations

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, skipped, verdict
from factory.validate.feedback import say


class AgentRunValidator:
    name = "agent_run"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        if not ctx.settings.agent_run:
            return skipped(self.name, "disabled", "the agent run is off (validation.agent_run = false)")
        if ctx.difficulty is None:
            return skipped(self.name, "no_difficulty_checker", "no search agent is configured for this run")
        report = ctx.difficulty.check(draft.question, list(draft.support_chunk_ids), ctx.item_id)
        figures = _report_figures(report)
        rollouts = figures.get("per_rollout") or []
        errors = [r.get("error") for r in rollouts if isinstance(r, dict) and r.get("error")]
        if rollouts and len(errors) == len(rollouts):
            return verdict(self.name, False, "agent_error", "", **figures)
        if not getattr(report, "too_easy", False):
            return verdict(self.name, True, **figures)
        # the checker's own feedback is English; other languages get ours
        feedback = (getattr(report, "feedback", "") or "") if draft.lang == "en" else ""
        if not feedback:
            queries = [str(q) for q in (getattr(report, "queries", None) or [])][:8]
            feedback = say(draft.lang, "too_easy", recall=figures.get("recall"), searches=figures.get("searches"),
                           rounds=figures.get("rounds"), queries="; ".join(f'"{q}"' for q in queries))
        return verdict(self.name, False, "too_easy", feedback, **figures)


def _report_figures(report: object) -> dict:
    if hasattr(report, "model_dump"):
        data = report.model_dump(mode="json")
    elif hasattr(report, "__dict__"):
        data = dict(vars(report))
    else:
        data = {}
    return {k: v for k, v in data.items() if k not in {"trace", "traces", "transcripts", "feedback", "ok", "reason"}}
