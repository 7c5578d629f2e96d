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


def draw_reference(store: Any, lang: str, n: int, seed: int, settings: Any, taxonomy: Any = None
                   ) -> list[ReferenceCandidate]:
    """The first ``n`` candidates with a subgraph, drawn as a generation run draws them:
    the run's cell sampler (nothing accepted yet) and each candidate's own selection RNG;
    a support set is never drawn twice. Selection failures are kept, in order, as
    ``no_subgraph`` candidates (they never reach a composer)."""
    from factory.compose.run import selector_params
    from factory.graph.select import NoSubgraph, SelectionIndex, select_subgraph
    from factory.taxonomy import CellSampler, NoCellsLeft, candidate_rng, load_taxonomy

    taxonomy = taxonomy or load_taxonomy(settings.compose.taxonomy_dir)
    sampler = CellSampler(taxonomy, seed, lang)
    selection = SelectionIndex.load(store, lang)
    params = selector_params(settings)
    used: set[frozenset[str]] = set()
    out: list[ReferenceCandidate] = []
    index = 0
    while sum(c.status != "no_subgraph" for c in out) < n:
        try:
            cell = sampler.draw(index)
        except NoCellsLeft as exc:
            raise FactoryError(f"the sampler has no cells left after {index} draws: {exc}") from exc
        try:
            subgraph = select_subgraph(selection, cell, lang, candidate_rng(seed, index, "select"),
                                       taxonomy=taxonomy, avoid_chunk_sets=used, params=params)
        except NoSubgraph as exc:
            if exc.structural:
                sampler.mark_unsupported(cell, exc.reason)
            out.append(ReferenceCandidate(index=index, seed=seed, lang=lang, cell=cell.key, status="no_subgraph",
                                          select_failure=exc.reason))
        else:
            used.add(frozenset(subgraph.chunk_ids))
            out.append(ReferenceCandidate(index=index, seed=seed, lang=lang, cell=cell.key, subgraph=subgraph))
        index += 1
    return out


def attach_first_drafts(candidates: list[ReferenceCandidate], rows: Iterable[dict[str, Any]]) -> list[str]:
    """Put a writer's first drafts (passage labels P1..Pn, as on the worksheets) into the
    candidates; returns problems (unknown index, label or status), nothing is guessed."""
    from factory.compose.common import labels_for

    by_index = {c.index: c for c in candidates}
    problems: list[str] = []
    for row in rows:
        cand = by_index.get(row.get("index"))
        if cand is None or cand.subgraph is None:
            problems.append(f"index {row.get('index')}: no candidate with a subgraph")
            continue
        if cand.drafts or cand.status == "no_honest_question":
            problems.append(f"index {cand.index}: already has its first draft")
            continue
        cand.writer_note = row.get("writer_note", "")
        if row.get("status") == "no_honest_question":
            cand.status = "no_honest_question"
            continue
        labels = labels_for(cand.subgraph)
        try:
            steps = [ReasoningStep(chunk_id=labels[s["passage"]], quote=s["quote"], finding=s.get("finding", ""))
                     for s in row["steps"]]
            cand.drafts.append(ReferenceDraft(question=row["question"], answer=row["answer"],
                                              answer_aliases=row.get("answer_aliases", []),
                                              answer_chunk_id=labels[row["answer_passage"]], steps=steps))
        except (KeyError, ValidationError) as exc:
            problems.append(f"index {cand.index}: {type(exc).__name__}: {exc}")
    return problems
