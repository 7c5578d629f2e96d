"""Records that cross stage boundaries.

One pydantic model per concept, ``extra="forbid"`` so that a typo in a field name
is an error at the boundary instead of a silently dropped value.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Lang = Literal["en", "ru"]

# One label set for both languages (spaCy and natasha labels are mapped onto it).
EntityLabel = Literal["person", "organization", "location", "date", "number", "work", "event", "other"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Document(Record):
    """A source document as read from a corpus file."""

    id: str
    title: str = ""
    text: str
    lang: Lang
    source: str = Field("", description="file the document was read from")
    meta: dict[str, Any] = Field(default_factory=dict)


class Chunk(Record):
    """A passage of a document: the unit that is indexed, cited and scored."""

    chunk_id: str = Field(description="'{doc_id}_{n}'; never parse it, use doc_id")
    doc_id: str
    n: int = Field(ge=0, description="position of the chunk inside its document")
    lang: Lang
    title: str = ""
    text: str
    content_hash: str
    n_tokens: int = 0
    char_start: int = 0
    char_end: int = 0


class Mention(Record):
    """One entity mention inside a chunk, character offsets relative to the chunk text."""

    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str
    label: EntityLabel
    entity_key: str


class Entity(Record):
    key: str
    label: EntityLabel
    name: str = Field(description="most frequent surface form")
    aliases: list[str] = Field(default_factory=list)
    mention_count: int = 0
    chunk_freq: int = 0
    doc_freq: int = 0


class Hit(Record):
    """One search result."""

    chunk_id: str
    score: float
    rank: int = Field(ge=1)
    snippet: str = ""


class Cell(Record):
    """A taxonomy cell: mechanic x question form x answer type."""

    mechanic: str
    form: str
    answer_type: str

    @property
    def key(self) -> str:
        return f"{self.mechanic}/{self.form}/{self.answer_type}"

    @classmethod
    def parse(cls, text: str) -> "Cell":
        parts = text.split("/")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"a cell is MECHANIC/FORM/TYPE, got {text!r}")
        return cls(mechanic=parts[0], form=parts[1], answer_type=parts[2])


class Subgraph(Record):
    """Chunks linked by shared entities, with the role each entity plays."""

    cell: Cell
    lang: Lang
    chunk_ids: list[str]
    answer_entity: str | None = Field(None, description="entity key of the answer, when the mechanic has one")
    bridge_entities: list[str] = Field(default_factory=list, description="entity keys the question must not name")
    constraint_entities: list[str] = Field(default_factory=list)
    roles: dict[str, str] = Field(default_factory=dict, description="chunk_id -> role (start, hop, answer, constraint, ...)")
    seed_chunk_ids: list[str] | None = Field(
        None, description="support chunks that mention an entity the question may name (factory/contract.py); "
                          "None in subgraphs stored before the contract, which then go by role")
    figures: dict[str, Any] = Field(default_factory=dict)


class Fact(Record):
    chunk_id: str
    statement: str = Field(description="the atomic fact as the chunk states it")
    paraphrase: str = Field(description="the same fact in other words, so the composer does not copy surface strings")


class FactSheet(Record):
    subgraph: Subgraph
    facts: list[Fact]
    passages: dict[str, str] = Field(default_factory=dict, description="chunk_id -> text, as the composer quotes it")


class ReasoningStep(Record):
    """One step of the solver's path as the composer planned it: the passage searched, a
    span quoted from it exactly, and what the step establishes (checked by ``answerable``)."""

    chunk_id: str
    quote: str
    finding: str = ""


class Draft(Record):
    """What the composer (or reviser) wrote: not yet a task."""

    draft_id: str
    candidate_id: str
    attempt: int = 0
    lang: Lang
    cell: Cell
    question: str = ""
    answer: str = ""
    answer_aliases: list[str] = Field(default_factory=list)
    support_chunk_ids: list[str] = Field(default_factory=list)
    answer_chunk_id: str | None = None
    bridge_entities: list[str] = Field(default_factory=list)
    steps: list[ReasoningStep] = Field(default_factory=list, description="the planned path, passage by passage")
    raw: str = Field("", description="the model's raw output, kept when parsing failed")
    parse_error: str | None = None
    declined: str = Field("", description="why the composer (or reviser) wrote no question: it found no honest "
                          "one on these passages; only another subgraph can change that")


class Verdict(Record):
    """The outcome of one validator on one draft."""

    ok: bool
    validator: str
    reason: str = Field("", description="short machine-readable reason code, e.g. 'answer_leaked'")
    feedback: str = Field("", description="actionable text the reviser can use")
    figures: dict[str, Any] = Field(default_factory=dict)
    hard: bool = True
    skipped: bool = False
    elapsed_s: float = 0.0


class Task(Record):
    """An accepted task: one field per column of the store's ``tasks`` table, which it is written as."""

    task_id: str = Field(description="its candidate's id, so a resumed run never doubles a task")
    run_id: str
    candidate_id: str
    draft_id: str = Field(description="the draft that passed the gauntlet")
    lang: Lang
    cell: str = Field(description="MECHANIC/FORM/TYPE")
    mechanic: str
    form: str
    answer_type: str
    question: str
    answer: str
    answer_aliases: list[str] = Field(default_factory=list)
    support_chunk_ids: list[str]
    answer_chunk_id: str | None = None
    bridge_entities: list[str] = Field(default_factory=list)
    revisions: int = 0
    validators: list[str] = Field(default_factory=list, description="validators that ran and passed")
    skipped_validators: list[str] = Field(default_factory=list)
    difficulty: dict[str, Any] = Field(default_factory=dict, description="validator figures: agent recall, ...")

    @classmethod
    def from_draft(cls, draft: Draft, *, run_id: str, revisions: int, validators: list[str],
                   skipped_validators: list[str], difficulty: dict[str, Any]) -> "Task":
        return cls(
            task_id=draft.candidate_id, run_id=run_id, candidate_id=draft.candidate_id, draft_id=draft.draft_id,
            lang=draft.lang, cell=draft.cell.key, mechanic=draft.cell.mechanic, form=draft.cell.form,
            answer_type=draft.cell.answer_type, question=draft.question, answer=draft.answer,
            answer_aliases=draft.answer_aliases, support_chunk_ids=draft.support_chunk_ids,
            answer_chunk_id=draft.answer_chunk_id, bridge_entities=draft.bridge_entities, revisions=revisions,
            validators=validators, skipped_validators=skipped_validators, difficulty=difficulty,
        )
