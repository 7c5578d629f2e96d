"""The reference draw's reselection: what the generation loop draws after its composer declines.

Over the English fixture corpus: the declined candidates (and only they) get a subgraph of
the same cell, never a support set drawn before nor an answer they declined, the same one on
every run; a round drawn before keeps its rows when a later decline is added to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from factory.graph.select import near
from factory.reference.draw import draw_reference, reselect_reference
from factory.settings import Settings
from factory.store import Store

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "corpus_en.jsonl"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from factory.ingest import ingest

    store = Store(tmp_path_factory.mktemp("reference-draw") / "store")
    ingest(FIXTURE, store, "en", Settings())
    return store


def test_declined_candidates_are_reselected_as_the_loop_reselects(store, monkeypatch) -> None:
    import factory.generate.drafting as drafting

    settings = Settings()
    declined_passed = []  # what each reselection was told it declined (the fixture corpus has no near
    real_select = drafting.select_for  # repeat to draw, so the rule itself is checked on what is passed)

    def spy(*args, **kwargs):
        declined_passed.append(kwargs["declined"])
        return real_select(*args, **kwargs)

    draw = draw_reference(store, "en", 6, 7, settings)
    drafted = [c for c in draw if c.subgraph is not None]
    declined = drafted[:3]
    for cand in declined:
        cand.status = "no_honest_question"
    monkeypatch.setattr(drafting, "select_for", spy)
    first = reselect_reference([draw], store, "en", settings)
    assert [c.index for c in first] == [c.index for c in declined]
    assert declined_passed == [{frozenset(c.subgraph.chunk_ids)} for c in declined]
    assert sum(c.subgraph is not None for c in first) >= 2  # the checks below have subgraphs to look at
    drawn_sets = {frozenset(c.subgraph.chunk_ids) for c in draw if c.subgraph is not None}
    for old, new in zip(declined, first):
        assert new.cell == old.cell and new.seed == old.seed
        if new.subgraph is not None:
            assert frozenset(new.subgraph.chunk_ids) not in drawn_sets
            assert old.subgraph.answer_entity is None or new.subgraph.answer_entity != old.subgraph.answer_entity
            # not mostly the subgraph it replaces (factory.graph.select.near; tests/graph/test_select_world.py
            # draws the near repeats that this corpus does not)
            assert not near(frozenset(new.subgraph.chunk_ids), {frozenset(old.subgraph.chunk_ids)})
    again = reselect_reference([draw], store, "en", settings)
    def picked(cands):  # what was drawn, without the selection's timing figure
        return [(c.index, c.status, c.subgraph and (c.subgraph.chunk_ids, c.subgraph.answer_entity)) for c in cands]

    assert picked(again) == picked(first)  # the candidate's own RNG: the same draw on every run

    # a reviser gives up on a fourth candidate later: the round keeps its rows and adds that one
    late = drafted[3]
    late.writer_note = "gave up: the feedback asks for what the passages cannot give"
    added = reselect_reference([draw], store, "en", settings, drawn=first)
    assert [c.index for c in added] == [late.index]
    taken = drawn_sets | {frozenset(c.subgraph.chunk_ids) for c in first if c.subgraph is not None}
    assert added[0].subgraph is None or frozenset(added[0].subgraph.chunk_ids) not in taken


def test_a_draw_written_again_keeps_its_subgraphs_and_loses_every_label(store) -> None:
    from factory.reference.draw import unwritten
    from factory.reference.records import ReferenceDraft

    draw = draw_reference(store, "en", 4, 7, Settings())
    drafted = [c for c in draw if c.subgraph is not None]
    drafted[0].status, drafted[0].writer_note = "no_honest_question", "the link is false"
    drafted[1].drafts = [ReferenceDraft(question="q?", answer="a", answer_chunk_id=drafted[1].subgraph.chunk_ids[-1])]
    blank = unwritten(draw)
    assert [(c.index, c.cell, c.subgraph) for c in blank] == [(c.index, c.cell, c.subgraph) for c in draw]
    for c in blank:
        if c.subgraph is not None:
            assert c.status == "drafted" and not c.drafts and not c.verdicts and not c.writer_note
        else:
            assert c.status == "no_subgraph"
    assert drafted[0].status == "no_honest_question" and drafted[1].drafts  # the draw itself is untouched


def test_remembered_declines_keep_a_later_draw_from_their_answers(store, tmp_path) -> None:
    """A draw's declined answers written to refused_answers (as the loop writes its composer's):
    the same seed then draws none of them, and writing them again adds nothing."""
    import shutil

    from factory.reference.draw import remember_refusals

    shutil.copytree(store.root, tmp_path / "store")
    mine = Store(tmp_path / "store", create=False)
    draw = draw_reference(mine, "en", 6, 7, Settings())
    by_answer = {c.subgraph.answer_entity: c for c in reversed(draw) if c.subgraph is not None and c.subgraph.answer_entity}
    fixed = sorted(by_answer.values(), key=lambda c: c.index)  # one candidate per answer
    assert len(fixed) >= 3
    fixed[0].status, fixed[0].writer_note = "no_honest_question", "the answer is famous"
    fixed[1].writer_note = "gave up: no rewording hides it"  # a reviser's give-up declines too
    assert remember_refusals(mine, draw, "en-test") == 2
    assert remember_refusals(mine, draw, "en-test") == 0
    rows = mine.query("SELECT entity_key, reason, note, run_id FROM refused_answers ORDER BY draft_id")
    assert {r["entity_key"] for r in rows} == {fixed[0].subgraph.answer_entity, fixed[1].subgraph.answer_entity}
    assert rows[0]["run_id"] == "reference:en-test" and {r["reason"] for r in rows} == {"no_honest_question"}
    again = draw_reference(mine, "en", 6, 7, Settings())
    answers = {c.subgraph.answer_entity for c in again if c.subgraph is not None}
    assert not answers & {r["entity_key"] for r in rows}
    assert all(c.subgraph.figures.get("refused_answers") == 2 for c in again
               if c.subgraph is not None and c.subgraph.answer_entity)
    untouched = draw_reference(store, "en", 6, 7, Settings())  # the shared store holds no memory
    assert [c.subgraph and c.subgraph.answer_entity for c in untouched] == [c.subgraph and c.subgraph.answer_entity
                                                                          for c in draw]
