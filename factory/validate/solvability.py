"""Solvability: given exactly the support chunks, an LLM derives the reference answer,
in most of several samples, and does not find a second answer the evidence also allows."""

from __future__ import annotations

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.llm_checks import solve_with


class SolvabilityValidator:
    name = "solvability"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        result = solve_with(list(draft.support_chunk_ids), draft, ctx, samples=s.solvability_samples, stage=self.name)
        figures = result.figures()
        if result.samples == 0 and result.truncated:
            return verdict(self.name, False, "truncated", "", **figures)
        if result.samples == 0:
            return verdict(self.name, False, "llm_error", "", **figures)
        if not result.majority(s.solvability_min_share):
            got = ", ".join(f'"{a}"' for a in result.answers if a) or say(draft.lang, "no_usable_answer")
            feedback = say(draft.lang, "not_solvable", answer=draft.answer, solved=result.solved,
                           samples=result.samples, got=got)
            return verdict(self.name, False, "not_solvable", feedback, **figures)
        if result.ambiguous * 2 > result.samples:
            others = sorted({a for alts in result.alternatives for a in alts})
            feedback = say(draft.lang, "ambiguous", others=", ".join(others[:5]), answer=draft.answer)
            return verdict(self.name, False, "ambiguous", feedback, **figures)
        return verdict(self.name, True, **figures)
