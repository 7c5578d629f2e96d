"""Composer and reviser: from a cell spec and a fact sheet to a Draft, and from a Draft
plus validator feedback to the next Draft.

The model sees paraphrased facts (not chunk text), the cell's guidance in its
language, and the roles: what it may name, what it must hide, and the answer when
the selector fixed one. Support chunk ids come from the subgraph, not the model (the
necessity validator prunes them); the model only says which passage holds the answer.
Nothing here raises on a bad answer: a failed call or parse is a Draft with
``parse_error`` and ``raw`` set, for the loop to record.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, create_model

from factory.compose.llm_call import call_llm
from factory.compose.passages import defuse, entity_aliases, entity_name, labels_for
from factory.llm.types import TRUNCATED, LLMRequest, LLMResponse, Sampling
from factory.prompts import COMPOSER
from factory.records import Draft, FactSheet, Subgraph, Verdict
from factory.taxonomy import CellSpec

FEEDBACK_CHARS = 600
# Length caps live in the schema, so a constraining backend (llama.cpp grammar, vLLM)
# cannot loop until max_tokens: a runaway string is closed at the cap and the JSON
# still parses (and then fails validation on its merits, not as a parse error).
QUESTION_CHARS, ANSWER_CHARS, STEP_CHARS = 400, 100, 300
Short = Annotated[str, StringConstraints(max_length=ANSWER_CHARS)]
Step = Annotated[str, StringConstraints(max_length=STEP_CHARS)]


@lru_cache(maxsize=16)
def draft_model(n_passages: int) -> type[BaseModel]:
    labels = tuple(f"P{i}" for i in range(1, n_passages + 1))
    return create_model(
        f"DraftOut{n_passages}",
        __config__=ConfigDict(extra="forbid"),
        question=(str, Field(min_length=1, max_length=QUESTION_CHARS)),
        answer=(str, Field(min_length=1, max_length=ANSWER_CHARS)),
        answer_aliases=(list[Short], Field(default_factory=list, max_length=6)),
        answer_passage=(Literal[labels] | None, None),  # type: ignore[valid-type]
        reasoning_steps=(list[Step], Field(default_factory=list, max_length=n_passages + 3)),
    )


def facts_block(sheet: FactSheet) -> str:
    back = {chunk: label for label, chunk in labels_for(sheet.subgraph).items()}
    return "\n".join(f"[{back[f.chunk_id]}] {defuse(f.paraphrase, 400)}" for f in sheet.facts if f.chunk_id in back)


def roles_block(subgraph: Subgraph, lang: str) -> str:
    say = COMPOSER.phrases(lang)
    back = {chunk: label for label, chunk in labels_for(subgraph).items()}
    figures = subgraph.figures
    lines = []
    named = [entity_name(subgraph, k) for k in subgraph.constraint_entities]
    lines.append(say["named"].format(names=", ".join(named) or say["none"]))
    hidden = [entity_name(subgraph, k) for k in subgraph.bridge_entities]
    if subgraph.answer_entity:
        hidden.append(entity_name(subgraph, subgraph.answer_entity))
    lines.append(say["hidden"].format(names=", ".join(dict.fromkeys(hidden)) or say["none"]))
    if figures.get("values"):
        items = "; ".join(f"{entity_name(subgraph, k)} = {', '.join(v) or '?'}" for k, v in figures["values"].items())
        lines.append(say["candidates"].format(items=items))
    if figures.get("operands"):
        items = "; ".join(f"{o['value']} ({back.get(o['chunk_id'], '?')})" for o in figures["operands"])
        lines.append(say["operands"].format(items=items))
    if figures.get("dates"):
        items = "; ".join(f"{back.get(c, '?')}: {', '.join(d)}" for c, d in figures["dates"].items())
        lines.append(say["dates"].format(items=items))
    if subgraph.answer_entity:
        lines.append(say["answer"].format(name=entity_name(subgraph, subgraph.answer_entity)))
    else:
        lines.append(say["answer_open"])
    return "\n".join(defuse(line) for line in lines)


def _to_draft(response: LLMResponse, sheet: FactSheet, lang: str, candidate_id: str, attempt: int,
              model: type[BaseModel]) -> Draft:
    subgraph = sheet.subgraph
    base = dict(
        draft_id=f"{candidate_id}-a{attempt}",
        candidate_id=candidate_id,
        attempt=attempt,
        lang=lang,
        cell=subgraph.cell,
        support_chunk_ids=list(subgraph.chunk_ids),
        bridge_entities=[entity_name(subgraph, k) for k in subgraph.bridge_entities],
        raw=response.text,
    )
    if response.error:
        return Draft(**base, parse_error=f"llm error: {response.error}")
    if response.truncated:  # the budget, not the format: the schema check reports it as such
        return Draft(**base, parse_error=f"{TRUNCATED}{response.truncated}")
    if response.parse_error or response.parsed is None:
        return Draft(**base, parse_error=response.parse_error or "no JSON object in the answer")
    try:
        out = model.model_validate(response.parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        return Draft(**base, parse_error=f"{where}: {first['msg']}")
    answer = out.answer.strip()  # type: ignore[attr-defined]
    aliases = [a.strip() for a in out.answer_aliases if a.strip()]  # type: ignore[attr-defined]
    if subgraph.answer_entity:
        known = [entity_name(subgraph, subgraph.answer_entity), *entity_aliases(subgraph, subgraph.answer_entity)]
        if answer.casefold() in {k.casefold() for k in known}:
            aliases += known
    aliases = [a for a in dict.fromkeys(aliases) if a.casefold() != answer.casefold()]
    labels = labels_for(subgraph)
    answer_chunk = labels.get(out.answer_passage or "")  # type: ignore[attr-defined]
    if answer_chunk is None:
        answer_chunk = next((c for c, role in subgraph.roles.items() if role == "answer"), None)
    base.update(raw="")
    return Draft(
        **base,
        question=out.question.strip(),  # type: ignore[attr-defined]
        answer=answer,
        answer_aliases=aliases,
        answer_chunk_id=answer_chunk,
        reasoning_steps=[s.strip() for s in out.reasoning_steps if s.strip()],  # type: ignore[attr-defined]
    )


def compose(
    sheet: FactSheet,
    spec: CellSpec,
    llm: Any,
    lang: str,
    candidate_id: str,
    attempt: int = 0,
    *,
    temperature: float = 0.7,
    max_tokens: int = 700,
) -> Draft:
    model = draft_model(len(sheet.subgraph.chunk_ids))
    user = COMPOSER.render(lang, "compose_user", guidance=spec.guidance(lang), facts=facts_block(sheet),
                  roles=roles_block(sheet.subgraph, lang))
    request = LLMRequest.chat(COMPOSER.render(lang, "compose_system"), user, output=model, sample_index=attempt,
                              sampling=Sampling(temperature=temperature, max_tokens=max_tokens))
    response = call_llm(llm, request, "compose", f"{candidate_id}-a{attempt}")
    return _to_draft(response, sheet, lang, candidate_id, attempt, model)


def feedback_block(verdicts: list[Verdict], lang: str) -> str:
    say = COMPOSER.phrases(lang)
    failed = [v for v in verdicts if not v.ok and not v.skipped] or list(verdicts)
    lines = [
        say["feedback_item"].format(validator=v.validator, text=defuse(v.feedback or v.reason, FEEDBACK_CHARS))
        for v in failed
    ]
    return "\n".join(lines) or say["none"]


def revise(
    draft: Draft,
    verdicts: list[Verdict],
    sheet: FactSheet,
    spec: CellSpec,
    llm: Any,
    lang: str,
    *,
    temperature: float = 0.7,
    max_tokens: int = 700,
) -> Draft:
    attempt = draft.attempt + 1
    model = draft_model(len(sheet.subgraph.chunk_ids))
    user = COMPOSER.render(
        lang, "revise_user",
        guidance=spec.guidance(lang),
        facts=facts_block(sheet),
        roles=roles_block(sheet.subgraph, lang),
        question=defuse(draft.question or "-", 800),
        answer=defuse(draft.answer or "-", 200),
        feedback=feedback_block(verdicts, lang),
    )
    request = LLMRequest.chat(COMPOSER.render(lang, "revise_system"), user, output=model, sample_index=attempt,
                              sampling=Sampling(temperature=temperature, max_tokens=max_tokens))
    response = call_llm(llm, request, "revise", f"{draft.candidate_id}-a{attempt}")
    revised = _to_draft(response, sheet, lang, draft.candidate_id, attempt, model)
    if sheet.subgraph.chunk_ids != draft.support_chunk_ids and draft.support_chunk_ids:
        # the loop may have pruned decorative chunks: keep its support set
        revised.support_chunk_ids = list(draft.support_chunk_ids)
    return revised
