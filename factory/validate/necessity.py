"""Chunk necessity: leave each support chunk out in turn and ask again.

A chunk whose removal keeps the task solvable is decorative. This validator only
reports them (a soft verdict, ``hard=False``); the generation loop prunes them one at a
time and runs the gauntlet again, so the support set that survives is minimal and
sufficient, and a multi-hop cell pruned down to one chunk fails the schema check.
"""

from __future__ import annotations

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.llm_checks import solve_with


class NecessityValidator:
    name = "necessity"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        support = list(dict.fromkeys(draft.support_chunk_ids))
        if len(support) < 2:
            return verdict(self.name, True, support=len(support), decorative=[])
        decorative: list[str] = []
        per_chunk: dict[str, dict] = {}
        for chunk_id in support:
            rest = [c for c in support if c != chunk_id]
            result = solve_with(rest, draft, ctx, samples=s.necessity_samples, stage=self.name)
            if result.samples == 0:
                return verdict(self.name, False, "llm_error", "", errors=result.errors, left_out=chunk_id)
            still = result.majority(s.solvability_min_share)
            per_chunk[chunk_id] = {"solved": result.solved, "samples": result.samples, "answers": result.answers,
                                   "errors": result.errors}  # a sample lost to a failed call shows here
            if still:
                decorative.append(chunk_id)
        figures = {"support": len(support), "decorative": decorative, "left_out": per_chunk,
                   "answer_chunk_decorative": draft.answer_chunk_id in decorative}
        if not decorative:
            return verdict(self.name, True, **figures)
        titles = ctx.chunks.titles(decorative)
        chunks = ", ".join(f"{c} ({titles[c]})" if titles.get(c) else c for c in decorative)
        feedback = say(draft.lang, "decorative", chunks=chunks)
        result = verdict(self.name, False, "decorative_chunks", feedback, **figures)
        result.hard = False
        return result
