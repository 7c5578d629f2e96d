"""Closed-book: an LLM without any evidence must not reach the answer.

Several samples (distinct ``sample_index``, so the gateway caches each): the first
greedy, the others sampled. The draft fails when the greedy answer reaches the answer,
or when more than ``closed_book_max_hits`` samples do; a part of the answer ('Smith'
for 'John Smith') is a guess, not a hit. A sample that did not parse is matched on its
raw text, so a model that cannot write JSON does not pass this check for free. A
rewrite cannot make a known answer unknown: the loop reselects instead of revising.
"""

from __future__ import annotations

from factory.llm.types import LLMRequest, Sampling
from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, verdict
from factory.validate.feedback import say
from factory.validate.llm_checks import KNOWN, ClosedBookAnswer, field_of, judge_answers, render


class ClosedBookValidator:
    name = "closed_book"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        prompt = render("closed_book", draft.lang, question=draft.question)
        requests = [  # sample 0 greedy: the model's own best answer; the rest sampled
            LLMRequest.chat(
                None, prompt, output=ClosedBookAnswer,
                sampling=Sampling(temperature=0.0 if i == 0 else s.closed_book_temperature, max_tokens=64),
                sample_index=i,
            )
            for i in range(s.closed_book_samples)
        ]
        responses = ctx.ask(requests, stage=self.name)
        errors = [r.error for r in responses if r.error]
        answers = [str(field_of(r, ClosedBookAnswer, "answer") or "") for r in responses if not r.error]
        if not answers:
            return verdict(self.name, False, "llm_error", "", errors=errors)
        judged = judge_answers(answers, draft, ctx, self.name)
        hits = [j for j in judged if j.match in KNOWN]
        greedy_hit = bool(judged) and not responses[0].error and judged[0].match in KNOWN
        figures = {"samples": len(answers), "hits": len(hits), "greedy_hit": greedy_hit, "answers": answers,
                   "truncated": sum(1 for r in responses if r.truncated is not None),
                   "matches": [j.match for j in judged], "errors": errors}
        if not greedy_hit and len(hits) <= s.closed_book_max_hits:
            return verdict(self.name, True, **figures)
        feedback = say(draft.lang, "closed_book", answer=hits[0].answer, hits=len(hits), samples=len(answers))
        return verdict(self.name, False, "closed_book_solved", feedback, **figures)
