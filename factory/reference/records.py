"""The strong-writer reference set: what the gauntlet does with drafts a strong composer writes.

No strong model runs on a CPU machine, so the contract between selection, composer
instructions and validators is measured on drafts written by hand for candidates the
factory itself drew: its cell sampler and selectors, one fixed seed, in draw order. A
fixture file (``tests/fixtures/reference_drafts/LANG.jsonl``) holds one candidate per
line: the draw index, the cell, the subgraph with its roles (what the question may name,
what it must hide), every draft in the order written (the first one before any verdict
was seen, then up to two revisions answering the gauntlet's feedback) and the verdicts
each draft got. Chunk ids only: passage texts come from the corpus at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import Field, ValidationError

from factory.errors import FactoryError
from factory.records import Cell, Draft, Lang, ReasoningStep, Record, Subgraph, Verdict

Status = Literal["drafted", "no_honest_question", "no_subgraph"]


class ReferenceDraft(Record):
    question: str
    answer: str
    answer_aliases: list[str] = Field(default_factory=list)
    answer_chunk_id: str
    steps: list[ReasoningStep] = Field(default_factory=list)
    note: str = Field("", description="for a revision: what the writer changed in answer to which feedback")


class ReferenceCandidate(Record):
    index: int = Field(description="the candidate's position in the draw")
    seed: int
    lang: Lang
    cell: str
    status: Status = "drafted"
    subgraph: Subgraph | None = None
    select_failure: str = Field("", description="why the selector found no subgraph (status no_subgraph)")
    writer_note: str = Field("", description="why no honest question exists (status no_honest_question), or remarks")
    drafts: list[ReferenceDraft] = Field(default_factory=list)
    verdicts: list[list[Verdict]] = Field(default_factory=list, description="per draft, as the gauntlet answered")

    def draft(self, i: int) -> Draft:
        """Draft ``i`` as the generation loop would hold it."""
        if self.subgraph is None:
            raise FactoryError(f"reference candidate {self.index} has no subgraph")
        ref = self.drafts[i]
        sub = self.subgraph
        names = sub.figures.get("entities", {})
        support = list(sub.chunk_ids)
        return Draft(
            draft_id=f"ref-{self.lang}-{self.index:03d}-a{i}", candidate_id=f"ref-{self.lang}-{self.index:03d}",
            attempt=i, lang=self.lang, cell=Cell.parse(self.cell), question=ref.question, answer=ref.answer,
            answer_aliases=list(ref.answer_aliases), support_chunk_ids=support, answer_chunk_id=ref.answer_chunk_id,
            bridge_entities=[(names.get(k) or {}).get("name") or k for k in sub.bridge_entities],
            steps=list(ref.steps),
        )


def read_reference(path: Path) -> list[ReferenceCandidate]:
    """Candidates of a fixture file; a bad line is an error naming the file and line."""
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(ReferenceCandidate.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise FactoryError(f"{path}:{number}: {where}: {first['msg']}") from exc
    return out


def write_reference(path: Path, candidates: Iterable[ReferenceCandidate]) -> None:
    lines = [c.model_dump_json(exclude_defaults=False) for c in candidates]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
