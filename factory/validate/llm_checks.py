"""What the LLM-based validators share: prompt files, output models, answering, judging.

Prompts live in ``prompts/<lang>/<name>.txt`` with ``$placeholders`` (string.Template:
corpus text inserted into a prompt is never parsed as a template itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from factory.llm.types import LLMRequest, LLMResponse, Sampling
from factory.prompts import VALIDATORS
from factory.records import Draft
from factory.validate.base import ValidationContext
from factory.validate.matching import Match, match_answer

UNKNOWN = {"unknown", "неизвестно", "не известно", "n/a", "none", "нет ответа"}


class ClosedBookAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answer: str = ""


REASONING_CHARS = 600  # the reader's reasoning is capped so a long derivation cannot eat the answer's budget
CHARS_PER_TOKEN = 2.5


class EvidenceAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reasoning: str = Field("", max_length=REASONING_CHARS)
    answer: str = Field("", max_length=120)
    other_answers: list[str] = Field(default_factory=list, max_length=4)


def evidence_answer_budget() -> int:
    """Completion tokens the longest EvidenceAnswer the schema admits takes, with a margin."""
    return int((REASONING_CHARS + 120 + 4 * 120 + 80) / CHARS_PER_TOKEN) + 32


# matches that mean a model without documents knew the answer; 'partial' ('Smith' for
# 'John Smith') is a guess at part of it, not the answer
KNOWN = {"exact", "contained", "judge"}


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    same: bool = False


def render(name: str, lang: str, **values: str) -> str:
    return VALIDATORS.template(lang, name).safe_substitute(**values)


def references(draft: Draft) -> list[str]:
    return [a for a in [draft.answer, *draft.answer_aliases] if a and a.strip()]


def field_of(response: LLMResponse, model: type[BaseModel], name: str) -> Any:
    """A field of the parsed output; for answers, the raw text when the JSON did not parse."""
    if response.parsed is not None:
        try:
            return getattr(model.model_validate(response.parsed), name)
        except Exception:
            pass
    return response.text if name == "answer" else None


def is_unknown(answer: str) -> bool:
    return answer.strip().strip(".!").casefold() in UNKNOWN or not answer.strip()


@dataclass
class Judged:
    answer: str
    match: str | None  # exact | contained | partial | judge | None
    error: str | None = None


def judge_answers(answers: list[str], draft: Draft, ctx: ValidationContext, stage: str) -> list[Judged]:
    """Rule-based matching first; the optional LLM judge only for what the rules left open."""
    refs = references(draft)
    out: list[Judged] = []
    for answer in answers:
        found: Match | None = None if is_unknown(answer) else match_answer(answer, refs, draft.lang)
        out.append(Judged(answer, found.kind if found else None))
    if not ctx.settings.llm_judge:
        return out
    open_items = [j for j in out if j.match is None and not is_unknown(j.answer)]
    requests = [
        LLMRequest.chat(
            None,
            render("judge", draft.lang, question=draft.question, reference=draft.answer, candidate=j.answer),
            output=JudgeAnswer,
            sampling=Sampling(temperature=0.0, max_tokens=32),
        )
        for j in open_items
    ]
    for judged, response in zip(open_items, ctx.ask(requests, stage=f"{stage}_judge")):
        if response.error:
            judged.error = response.error
        elif field_of(response, JudgeAnswer, "same") is True:
            judged.match = "judge"
    return out


def evidence_block(chunk_ids: list[str], ctx: ValidationContext) -> str:
    texts = ctx.chunks.texts(chunk_ids)
    titles = ctx.chunks.titles(chunk_ids)
    parts = []
    for chunk_id in chunk_ids:
        title = titles.get(chunk_id, "")
        head = f"[{chunk_id}]" + (f" {title}" if title else "")
        parts.append(f"{head}\n{texts.get(chunk_id, '')}")
    return "\n\n".join(parts)


@dataclass
class SolveResult:
    samples: int
    solved: int
    answers: list[str] = field(default_factory=list)
    alternatives: list[list[str]] = field(default_factory=list)
    ambiguous: int = 0  # samples that named another answer the evidence also allows
    truncated: int = 0  # samples cut off at their budget: neither solved nor unsolved
    errors: list[str] = field(default_factory=list)

    def majority(self, share: float) -> bool:
        return self.samples > 0 and self.solved / self.samples > share

    def figures(self) -> dict[str, Any]:
        return {"samples": self.samples, "solved": self.solved, "ambiguous": self.ambiguous,
                "truncated": self.truncated, "answers": self.answers, "alternatives": self.alternatives,
                "errors": self.errors}


def solve_with(chunk_ids: list[str], draft: Draft, ctx: ValidationContext, *, samples: int, stage: str) -> SolveResult:
    """Ask the LLM the question with exactly these chunks as evidence, ``samples`` times."""
    s = ctx.settings
    prompt = render("solvability", draft.lang, evidence=evidence_block(chunk_ids, ctx), question=draft.question)
    budget = max(s.max_tokens, evidence_answer_budget())
    requests = [
        LLMRequest.chat(
            None, prompt, output=EvidenceAnswer,
            sampling=Sampling(temperature=s.solvability_temperature, max_tokens=budget), sample_index=i,
        )
        for i in range(samples)
    ]
    responses = ctx.ask(requests, stage=stage)
    result = SolveResult(samples=0, solved=0)
    answers: list[str] = []
    for response in responses:
        if response.error:
            result.errors.append(response.error)
            continue
        if response.truncated is not None:  # cut off: no verdict on the question, a figure on the budget
            result.truncated += 1
            continue
        result.samples += 1
        answer = str(field_of(response, EvidenceAnswer, "answer") or "") if response.parsed is not None else ""
        # an unparsable reply is not a derivation: the sample counts as unsolved
        answers.append(answer)
        alternatives = [str(a) for a in (field_of(response, EvidenceAnswer, "other_answers") or []) if str(a).strip()]
        result.alternatives.append(alternatives)
    judged = judge_answers(answers, draft, ctx, stage)
    result.answers = answers
    result.solved = sum(1 for j in judged if j.match)
    # another answer counts only if it is not just the reference again
    refs = references(draft)
    for alternatives in result.alternatives:
        real = [a for a in alternatives if not is_unknown(a) and not match_answer(a, refs, draft.lang)]
        if real:
            result.ambiguous += 1
    return result
