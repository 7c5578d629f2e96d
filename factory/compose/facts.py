"""The fact sheet: what each support chunk contributes, restated in other words.

One LLM call per subgraph. Passages are labelled P1..Pn in the prompt (short labels
a small model copies reliably; the output schema restricts ``passage`` to them, so a
constraining backend cannot invent one) and mapped back to chunk ids here.

Failure contract: a failed call, or an answer that does not parse or holds no usable
fact, raises ``ComposeError(reason, raw)`` for the loop to record. When the answer is
usable but leaves a support chunk without a fact, that chunk gets an extractive fact
(its sentences naming the subgraph's entities, statement = paraphrase) and its id is
listed in ``subgraph.figures["fact_fallback"]``, so weak models still yield a sheet
and the shortcut validator sees any copied wording.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from factory.compose.llm_call import call_llm
from factory.compose.passages import defuse, entity_name, labels_for, passage_label
from factory.errors import FactoryError
from factory.llm.types import LLMRequest, Sampling
from factory.prompts import COMPOSER
from factory.records import Fact, FactSheet, Subgraph

PER_PASSAGE = 3
PASSAGE_CHARS = 1800  # keeps n passages well inside a small model's context
FACT_CHARS = 240
CHARS_PER_TOKEN = 2.5  # a safe floor for English and Russian with common tokenizers


def facts_budget(n_passages: int) -> int:
    """Completion tokens the longest sheet the schema admits can take, with a margin."""
    return int(n_passages * PER_PASSAGE * (2 * FACT_CHARS + 40) / CHARS_PER_TOKEN) + 64


class ComposeError(FactoryError):
    """The fact sheet could not be built; ``raw`` keeps what the model said."""

    def __init__(self, reason: str, raw: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


@lru_cache(maxsize=16)
def facts_model(n_passages: int) -> type[BaseModel]:
    """``{"facts": [{"passage": "P1".."Pn", "statement", "paraphrase"}]}`` for n passages."""
    item = create_model(
        f"FactItem{n_passages}",
        __config__=ConfigDict(extra="forbid"),
        passage=(passage_label(n_passages), ...),
        statement=(str, Field(min_length=1, max_length=FACT_CHARS)),
        paraphrase=(str, Field(min_length=1, max_length=FACT_CHARS)),
    )
    return create_model(  # the caps keep a looping model inside valid JSON (see composer.py)
        f"Facts{n_passages}", __config__=ConfigDict(extra="forbid"),
        facts=(list[item], Field(min_length=1, max_length=PER_PASSAGE * n_passages)),  # type: ignore[valid-type]
    )


def passages_block(subgraph: Subgraph, chunk_texts: dict[str, str]) -> str:
    parts = []
    for label, chunk_id in labels_for(subgraph).items():
        text = chunk_texts.get(chunk_id)
        if text is None:
            raise ComposeError(f"no text for support chunk {chunk_id}")
        parts.append(f'<passage id="{label}">\n{defuse(text, PASSAGE_CHARS)}\n</passage>')
    return "\n".join(parts)


def key_entities(subgraph: Subgraph) -> list[str]:
    names = [entity_name(subgraph, k) for k in subgraph.figures.get("entities", {})]
    return [n for n in dict.fromkeys(names) if n]


def build_fact_sheet(
    subgraph: Subgraph,
    chunk_texts: dict[str, str],
    llm: Any,
    lang: str,
    item_id: str,
    *,
    temperature: float = 0.2,
    max_tokens: int = 0,
) -> FactSheet:
    """``max_tokens``: 0 sizes the budget from the passages (``facts_budget``), else caps it."""
    labels = labels_for(subgraph)
    model = facts_model(len(labels))
    user = COMPOSER.render(
        lang, "facts_user",
        passages=passages_block(subgraph, chunk_texts),
        entities=defuse(", ".join(key_entities(subgraph)), 600) or "-",  # NER names are corpus text too
        per_passage=PER_PASSAGE,
        labels=", ".join(labels),
    )
    budget = facts_budget(len(labels))
    budget = min(budget, max_tokens) if max_tokens else budget
    request = LLMRequest.chat(COMPOSER.render(lang, "facts_system"), user, output=model,
                              sampling=Sampling(temperature=temperature, max_tokens=budget))
    response = call_llm(llm, request, "facts", item_id)
    if response.error:
        raise ComposeError(f"fact sheet: LLM call failed: {response.error}", response.text)
    if response.truncated:
        raise ComposeError(f"fact sheet: truncated: {response.truncated}", response.text)
    if response.parse_error or response.parsed is None:
        raise ComposeError(f"fact sheet: unparseable answer: {response.parse_error or 'no JSON object'}", response.text)
    try:
        parsed = model.model_validate(response.parsed)
    except ValidationError as exc:
        raise ComposeError(f"fact sheet: answer does not fit the schema: {exc.errors()[0]['msg']}", response.text) from exc
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()
    for item in parsed.facts:  # type: ignore[attr-defined]
        statement, paraphrase = item.statement.strip(), item.paraphrase.strip()
        if not statement or (item.passage, statement.casefold()) in seen:
            continue
        seen.add((item.passage, statement.casefold()))
        facts.append(Fact(chunk_id=labels[item.passage], statement=statement, paraphrase=paraphrase or statement))
    if not facts:
        raise ComposeError("fact sheet: the answer holds no fact", response.text)
    covered = {f.chunk_id for f in facts}
    missing = [c for c in subgraph.chunk_ids if c not in covered]
    sheet_graph = subgraph.model_copy(deep=True)
    if missing:
        sheet_graph.figures["fact_fallback"] = missing
        names = key_entities(subgraph)
        for chunk_id in missing:
            for sentence in extractive_facts(chunk_texts[chunk_id], names):
                facts.append(Fact(chunk_id=chunk_id, statement=sentence, paraphrase=sentence))
    order = {c: i for i, c in enumerate(subgraph.chunk_ids)}
    facts.sort(key=lambda f: order[f.chunk_id])  # stable: the model's order inside a chunk
    return FactSheet(subgraph=sheet_graph, facts=facts, passages={c: chunk_texts[c] for c in subgraph.chunk_ids})


_SENTENCE = re.compile(r"(?<=[.!?…])\s+(?=[A-ZА-ЯЁ0-9«\"(])")


def extractive_facts(text: str, names: list[str], limit: int = 2) -> list[str]:
    """The chunk's sentences that name the most key entities (at least one sentence)."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    if not sentences:
        return [text.strip()[:300]]
    folded = [n.casefold() for n in names]
    scored = sorted(
        range(len(sentences)),
        key=lambda i: (-sum(n in sentences[i].casefold() for n in folded), i),
    )
    keep = sorted(scored[:limit]) if any(n in sentences[scored[0]].casefold() for n in folded) else scored[:1]
    return [sentences[i][:400] for i in keep]


def load_chunk_texts(store: Any, chunk_ids: list[str]) -> dict[str, str]:
    """Chunk id -> text from the store (the current version of each chunk)."""
    rows = store.query("SELECT chunk_id, text FROM chunks WHERE list_contains(?, chunk_id)", [list(chunk_ids)])
    return {r["chunk_id"]: r["text"] for r in rows}
