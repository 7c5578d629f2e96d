"""Composer and reviser: from a cell spec and a fact sheet to a Draft, and from the
drafts so far plus the gauntlet's verdicts to the next Draft.

The model sees the passages (labelled P1..Pn, the labels every check's feedback uses
too), the fact sheet as a guide, the cell's guidance in its language, and the contract
(factory/contract.py): what it may name, what it must hide, which passages each side
reaches, the values to use and the answer when the selector fixed one. It plans
before it commits: the schema asks for the steps (passage, exact quote, finding), then
the answer, and the question last; or it declines, saying why no honest question exists
on the passages (``Decline``), and the loop draws another subgraph. Support chunk ids come
from the subgraph, not the model. Nothing here raises on a bad answer: a failed call, a cut-off answer or a parse
failure is a Draft with ``parse_error`` and ``raw`` set, for the loop to record.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints, ValidationError, create_model

from factory.compose.facts import passages_block
from factory.compose.llm_call import call_llm
from factory.compose.passages import defuse, entity_aliases, entity_name, labels_for, passage_label
from factory.contract import seed_chunks
from factory.llm.types import TRUNCATED, LLMRequest, LLMResponse, Sampling
from factory.prompts import COMPOSER
from factory.records import Draft, FactSheet, ReasoningStep, Subgraph, Verdict
from factory.taxonomy import CellSpec
from factory.validate.tokens import keys_of, rarest

FEEDBACK_CHARS = 2000  # a shortcut report lists passages and words; cutting it mid-list loses the advice
# Length caps live in the schema, so a constraining backend (llama.cpp grammar, vLLM)
# cannot loop until max_tokens: a runaway string is closed at the cap and the JSON
# still parses (and then fails validation on its merits, not as a parse error).
QUESTION_CHARS, ANSWER_CHARS, QUOTE_CHARS, FINDING_CHARS = 500, 100, 300, 240
DECLINE_CHARS = 400
MAX_ALIASES = 6
CHARS_PER_TOKEN = 2.5  # a safe floor for English and Russian with common tokenizers
Short = Annotated[str, StringConstraints(max_length=ANSWER_CHARS)]


# The composer's answer when no honest question exists on the passages: the record keeps the
# reason, and the loop answers it with another subgraph (a rewrite cannot fix it). Its
# docstring is the description the model reads in the schema.
class Decline(BaseModel):
    """Instead of a draft: why no honest question can be written on these passages."""

    model_config = ConfigDict(extra="forbid")
    no_honest_question: str = Field(min_length=20, max_length=DECLINE_CHARS)


@lru_cache(maxsize=16)
def draft_model(n_passages: int) -> type[BaseModel]:
    """The composer's output: a draft (every field required, in the order the model should
    think) or a ``Decline``."""
    body = _draft_body(n_passages)
    return type(f"DraftOut{n_passages}", (RootModel[Union[body, Decline]],), {"__module__": __name__})


def _draft_body(n_passages: int) -> type[BaseModel]:
    step = create_model(
        f"DraftStep{n_passages}",
        __config__=ConfigDict(extra="forbid"),
        passage=(passage_label(n_passages), ...),
        quote=(str, Field(min_length=1, max_length=QUOTE_CHARS)),
        finding=(str, Field(min_length=1, max_length=FINDING_CHARS)),
    )
    return create_model(
        f"Draft{n_passages}",
        __config__=ConfigDict(extra="forbid"),
        steps=(list[step], Field(min_length=1, max_length=n_passages + 2)),  # type: ignore[valid-type]
        answer=(str, Field(min_length=1, max_length=ANSWER_CHARS)),
        answer_aliases=(list[Short], Field(max_length=MAX_ALIASES)),
        answer_passage=(passage_label(n_passages), ...),
        question=(str, Field(min_length=1, max_length=QUESTION_CHARS)),
    )


def output_budget(n_passages: int) -> int:
    """Completion tokens the longest answer the schema admits can take, with a margin."""
    chars = ((n_passages + 2) * (QUOTE_CHARS + FINDING_CHARS + 40) + QUESTION_CHARS
             + ANSWER_CHARS * (MAX_ALIASES + 1) + 200)
    return int(chars / CHARS_PER_TOKEN) + 64


def facts_block(sheet: FactSheet) -> str:
    back = {chunk: label for label, chunk in labels_for(sheet.subgraph).items()}
    return "\n".join(f"[{back[f.chunk_id]}] {defuse(f.paraphrase, 400)}" for f in sheet.facts if f.chunk_id in back)


# A word of a hidden passage found in at most this share of the index's passages helps a
# search rank that passage; the composer may use at most SHARED_WORDS_MAX of them (the phrase
# "searchable"). Chosen from `python -m bench.shared_words --sets draw3,,dense,draw5,draw6`: over
# the hand-written reference drafts judged by BM25 (en 170: 121 kept, 49 refused; ru 272: 155
# kept, 117 refused), three words at 10% keep 103/121 en kept drafts within the budget and rule
# out 42/49 refused ones; in ru 155/155 and 92/117, while 20% gives 150/155 and 108/117. The
# Russian corpus is small (1,434 passages), so words in a fifth of it still rank a passage; 20%
# adds about 7 words to a median list of 82. (Draws 3-5 alone had chosen 10% for both.)
DISTINCTIVE_SHARE = {"en": 0.10, "ru": 0.20}
SHARED_WORDS_MAX = 3
SEARCHABLE_WORDS = 150  # a complete list on those draws: the longest had 123 words at 10%


def searchable_words(subgraph: Subgraph, texts: dict[str, str], lang: str, vocabulary: Any,
                     n: int = SEARCHABLE_WORDS) -> dict[str, list[str]]:
    """Per hidden passage (factory/contract.py), the words a search engine finds it by: every
    content word the fixed index (``vocabulary``: its ``doc_freq`` and ``chunk_ids``) holds in at
    most ``DISTINCTIVE_SHARE[lang]`` of its passages, the rarest ``n`` when there are more, leaving
    out names the question may use and the hidden names (never allowed anyway). The composer
    may use at most ``SHARED_WORDS_MAX`` of them: the broad-query check pastes the whole
    question into that index, and a question sharing many such words finds the passage."""
    if vocabulary is None:
        return {}
    max_df = max(1, int(DISTINCTIVE_SHARE.get(lang, DISTINCTIVE_SHARE["en"]) * len(vocabulary.chunk_ids)))
    seeds = seed_chunks(subgraph)
    names = [entity_name(subgraph, k) for k in (*subgraph.constraint_entities, *subgraph.bridge_entities)]
    if subgraph.answer_entity:
        names.append(entity_name(subgraph, subgraph.answer_entity))
    skip = keys_of(names, lang)
    return {c: [t.surface for t in rarest(texts.get(c, ""), lang, vocabulary.doc_freq, n, skip=skip, max_df=max_df)]
            for c in subgraph.chunk_ids if c not in seeds and texts.get(c)}


def roles_block(subgraph: Subgraph, lang: str, searchable: dict[str, list[str]] | None = None) -> str:
    """The contract as the composer reads it (factory/contract.py): what the question may
    name, what it must hide, which passages each side reaches, the words that would find
    each hidden passage (``searchable_words``), and the values to use."""
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
    seeds = seed_chunks(subgraph)
    seed_labels = [back[c] for c in subgraph.chunk_ids if c in seeds]
    hidden_labels = [back[c] for c in subgraph.chunk_ids if c not in seeds]
    lines.append(say["seed_passages"].format(labels=", ".join(seed_labels) or say["none"]))
    lines.append(say["hidden_passages"].format(labels=", ".join(hidden_labels) or say["none"]))
    for chunk, words in (searchable or {}).items():
        if chunk in back and words:
            lines.append(say["searchable"].format(label=back[chunk], words=", ".join(words), most=SHARED_WORDS_MAX))
    if not hidden_labels and len(subgraph.chunk_ids) > 1:
        lines.append(say["all_seeds"])
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
              model: type[BaseModel], budget: int) -> Draft:
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
    if response.truncated:  # cut off: not a wrong answer, a budget too small (or spent thinking)
        return Draft(**base, parse_error=f"{TRUNCATED}{response.truncated}")
    if response.parse_error or response.parsed is None:
        return Draft(**base, parse_error=response.parse_error or "no JSON object in the answer")
    try:
        out = model.model_validate(response.parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        return Draft(**base, parse_error=f"{where}: {first['msg']}")
    out = out.root  # type: ignore[attr-defined]
    if isinstance(out, Decline):
        base.update(raw="")
        return Draft(**base, declined=out.no_honest_question.strip())
    answer = out.answer.strip()  # type: ignore[attr-defined]
    aliases = [a.strip() for a in out.answer_aliases if a.strip()]  # type: ignore[attr-defined]
    if subgraph.answer_entity:
        known = [entity_name(subgraph, subgraph.answer_entity), *entity_aliases(subgraph, subgraph.answer_entity)]
        if answer.casefold() in {k.casefold() for k in known}:
            aliases += known
    aliases = [a for a in dict.fromkeys(aliases) if a.casefold() != answer.casefold()]
    labels = labels_for(subgraph)
    steps = [ReasoningStep(chunk_id=labels[st.passage], quote=st.quote.strip(), finding=st.finding.strip())
             for st in out.steps]  # type: ignore[attr-defined]
    base.update(raw="")
    return Draft(
        **base,
        question=out.question.strip(),  # type: ignore[attr-defined]
        answer=answer,
        answer_aliases=aliases,
        answer_chunk_id=labels[out.answer_passage],  # type: ignore[attr-defined]
        steps=steps,
    )


def _request(system: str, user: str, sheet: FactSheet, attempt: int, temperature: float,
             max_tokens: int) -> tuple[LLMRequest, type[BaseModel], int]:
    model = draft_model(len(sheet.subgraph.chunk_ids))
    budget = output_budget(len(sheet.subgraph.chunk_ids))
    budget = min(budget, max_tokens) if max_tokens else budget
    request = LLMRequest.chat(system, user, output=model, sample_index=attempt,
                              sampling=Sampling(temperature=temperature, max_tokens=budget))
    return request, model, budget


def _evidence(sheet: FactSheet, lang: str, spec: CellSpec, searchable: dict[str, list[str]] | None) -> dict[str, str]:
    return {"guidance": spec.guidance(lang), "passages": passages_block(sheet.subgraph, sheet.passages),
            "facts": facts_block(sheet), "roles": roles_block(sheet.subgraph, lang, searchable)}


def compose(
    sheet: FactSheet,
    spec: CellSpec,
    llm: Any,
    lang: str,
    candidate_id: str,
    attempt: int = 0,
    *,
    temperature: float = 0.7,
    max_tokens: int = 0,
    searchable: dict[str, list[str]] | None = None,
) -> Draft:
    """``max_tokens``: 0 sizes the completion budget from the request (``output_budget``);
    ``searchable``: the hidden passages' search words (``searchable_words``), when known."""
    user = COMPOSER.render(lang, "compose_user", **_evidence(sheet, lang, spec, searchable))
    request, model, budget = _request(COMPOSER.render(lang, "compose_system"), user, sheet, attempt, temperature,
                                      max_tokens)
    response = call_llm(llm, request, "compose", f"{candidate_id}-a{attempt}")
    return _to_draft(response, sheet, lang, candidate_id, attempt, model, budget)


def label_chunks(text: str, subgraph: Subgraph) -> str:
    """Chunk ids in feedback written as the passage labels the model sees."""
    for label, chunk_id in labels_for(subgraph).items():
        text = text.replace(chunk_id, label)
    return text


def feedback_block(verdicts: list[Verdict], lang: str, subgraph: Subgraph | None = None) -> str:
    say = COMPOSER.phrases(lang)
    failed = [v for v in verdicts if not v.ok and not v.skipped] or list(verdicts)
    lines = []
    for v in failed:
        text = v.feedback or v.reason
        if subgraph is not None:
            text = label_chunks(text, subgraph)
        lines.append(say["feedback_item"].format(validator=v.validator, text=defuse(text, FEEDBACK_CHARS)))
    return "\n".join(lines) or say["none"]


def history_block(history: Sequence[tuple[Draft, list[Verdict]]], sheet: FactSheet, lang: str) -> str:
    """Every earlier draft with its question, answer, steps and what the checks found."""
    say = COMPOSER.phrases(lang)
    back = {chunk: label for label, chunk in labels_for(sheet.subgraph).items()}
    parts = []
    for n, (draft, verdicts) in enumerate(history, 1):
        lines = [say["history_draft"].format(n=n),
                 say["history_question"].format(text=defuse(draft.question or "-", 800)),
                 say["history_answer"].format(text=defuse(draft.answer or "-", 200))]
        lines += [f'- {back.get(st.chunk_id, "?")} "{defuse(st.quote, QUOTE_CHARS)}" -> {defuse(st.finding, FINDING_CHARS)}'
                  for st in draft.steps]
        lines += [say["history_checks"], feedback_block(verdicts, lang, sheet.subgraph)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or say["none"]


def revise(
    history: Sequence[tuple[Draft, list[Verdict]]],
    sheet: FactSheet,
    spec: CellSpec,
    llm: Any,
    lang: str,
    *,
    temperature: float = 0.7,
    max_tokens: int = 0,
    searchable: dict[str, list[str]] | None = None,
) -> Draft:
    """The next draft after ``history`` (every draft so far, oldest first, with its verdicts)."""
    last = history[-1][0]
    attempt = last.attempt + 1
    user = COMPOSER.render(lang, "revise_user", **_evidence(sheet, lang, spec, searchable),
                           history=history_block(history, sheet, lang))
    request, model, budget = _request(COMPOSER.render(lang, "revise_system"), user, sheet, attempt, temperature,
                                      max_tokens)
    response = call_llm(llm, request, "revise", f"{last.candidate_id}-a{attempt}")
    revised = _to_draft(response, sheet, lang, last.candidate_id, attempt, model, budget)
    if sheet.subgraph.chunk_ids != last.support_chunk_ids and last.support_chunk_ids:
        # the loop may have pruned decorative chunks: keep its support set
        revised.support_chunk_ids = list(last.support_chunk_ids)
    return revised
