"""Gauntlet order and stopping, the shortcut rule over several searchers, schema details."""

from __future__ import annotations

import pytest

from factory.records import Hit, Subgraph, Verdict
from factory.settings import ValidateSettings
from factory.validate.gauntlet import UnknownValidator, build_validators, run_gauntlet
from factory.validate.schema import SchemaValidator
from factory.validate.shortcut import ShortcutValidator

from conftest import make_context
from planted_drafts import chunk_texts, clean_cases


class ListSearcher:
    """Returns a fixed ranking (stands for one of the index's searchers)."""

    def __init__(self, name, ranking):
        self.name, self.ranking = name, ranking
        self.queries = []

    def search(self, query, k=10):
        self.queries.append(query)
        return [Hit(chunk_id=c, score=1.0 / (i + 1), rank=i + 1) for i, c in enumerate(self.ranking[:k])]

    def search_many(self, queries, k=10):
        return [self.search(q, k) for q in queries]


class Recorder:
    def __init__(self, name, ok=True, skipped=False, boom=False):
        self.name, self.ok, self.skip, self.boom = name, ok, skipped, boom
        self.seen = 0

    def check(self, draft, ctx):
        self.seen += 1
        if self.boom:
            raise RuntimeError("bug")
        return Verdict(ok=self.ok, validator=self.name, skipped=self.skip, hard=not self.skip)


def _ctx(**kw):
    return make_context(chunk_texts("en"), **kw)


def test_gauntlet_stops_at_first_failure_but_not_at_skips():
    draft = clean_cases("en", 1)[0].draft
    a, s, b, c = Recorder("a"), Recorder("s", ok=False, skipped=True), Recorder("b", ok=False), Recorder("c")
    result = run_gauntlet(draft, _ctx(), [a, s, b, c])
    assert [v.validator for v in result.verdicts] == ["a", "s", "b"]
    assert c.seen == 0 and not result.passed and result.failure.validator == "b"
    assert result.skipped_names == ["s"] and result.passed_names == ["a"]


def test_gauntlet_turns_a_crash_into_a_verdict():
    draft = clean_cases("en", 1)[0].draft
    result = run_gauntlet(draft, _ctx(), [Recorder("x", boom=True)])
    assert result.failure.reason == "validator_error" and "bug" in result.failure.figures["error"]
    assert result.failure.elapsed_s >= 0


def test_build_validators_in_settings_order_and_unknown_names():
    names = [v.name for v in build_validators(ValidateSettings().order)]
    assert names == ["schema", "dedup", "answerable", "leakage", "shortcut", "closed_book", "solvability",
                     "necessity", "agent_run"]
    with pytest.raises(UnknownValidator):
        build_validators(["schema", "vibes"])


def _chain(draft, seeds):
    """The draft's subgraph as a selector records it: start passage(s) reached from the named seed."""
    roles = {c: "start" if c in seeds else "answer" for c in draft.support_chunk_ids}
    return Subgraph(cell=draft.cell, lang=draft.lang, chunk_ids=list(draft.support_chunk_ids), roles=roles,
                    seed_chunk_ids=list(seeds))


def test_shortcut_by_the_contract_seed_passages_may_surface_hidden_ones_may_not():
    draft = clean_cases("en", 1)[0].draft  # support [A, B], answer chunk B
    a, b = draft.support_chunk_ids
    filler = [f"x{i}" for i in range(20)]
    quiet = ListSearcher("bm25", filler)
    chain = _chain(draft, [a])

    def check(settings=None, **searchers):
        ctx = _ctx(searchers=searchers, **({"settings": settings} if settings else {}))
        return ShortcutValidator().check(draft, ctx.for_item("d", chain))

    ok = check(bm25=quiet, dense=quiet, hybrid=quiet)
    assert ok.ok and quiet.queries == [draft.question] * 3  # the whole question, verbatim, to each
    assert ok.figures["seed_passages"] == [a] and ok.figures["hidden_passages"] == [b]

    # the start passage, found because the question names its entity, is no shortcut
    assert check(hybrid=ListSearcher("hybrid", [a] + filler)).ok

    answer_late = ListSearcher("dense", filler[:9] + [b])  # the hidden answer passage at rank 10: inside top 10
    verdict = check(bm25=quiet, dense=answer_late)
    assert not verdict.ok and verdict.reason == "answer_passage_found"
    assert verdict.figures["searchers"]["dense"]["answer_rank"] == 10 and "dense" in verdict.feedback
    assert "Only a search by meaning finds it" in verdict.feedback  # no word search did: synonyms will not help
    by_words = check(bm25=ListSearcher("bm25", [b] + filler), dense=answer_late)
    assert not by_words.ok and "Only a search by meaning" not in by_words.feedback
    assert check(dense=ListSearcher("dense", filler[:10] + [b])).ok  # rank 11: outside
    assert check(ValidateSettings(shortcut_k=5), dense=answer_late).ok

    # a chain of three: the answer passage stays hidden; one of two hidden passages is not "most"
    c = "hop_0"
    longer = draft.model_copy(update={"support_chunk_ids": [a, c, b]})
    sub = Subgraph(cell=draft.cell, lang="en", chunk_ids=[a, c, b], roles={a: "start", c: "hop", b: "answer"},
                   seed_chunk_ids=[a])
    hop = ListSearcher("hybrid", [c] + filler)
    assert ShortcutValidator().check(longer, _ctx(searchers={"hybrid": hop}).for_item("d", sub)).ok
    stricter = _ctx(searchers={"hybrid": hop}, settings=ValidateSettings(shortcut_hidden_share=0.4))
    verdict = ShortcutValidator().check(longer, stricter.for_item("d", sub))
    assert not verdict.ok and verdict.reason == "hidden_passages_found"


def test_a_question_whose_one_query_finds_all_its_evidence_is_a_shortcut_always():
    draft = clean_cases("en", 1)[0].draft
    a, b = draft.support_chunk_ids
    both_seeds = _chain(draft, [a, b])  # an intersection naming both of its clues
    everything = ListSearcher("bm25", [b, a])
    verdict = ShortcutValidator().check(draft, _ctx(searchers={"bm25": everything}).for_item("d", both_seeds))
    assert not verdict.ok and verdict.reason == "all_evidence_found"
    assert "Name fewer of the entities you may name" in verdict.feedback


def test_without_roles_a_passage_is_a_seed_only_when_the_question_names_its_title():
    draft = clean_cases("en", 1)[0].draft
    a, b = draft.support_chunk_ids
    texts = chunk_texts("en")
    title = texts[a][0]  # each fixture article is its entity; the clean question names A
    ctx = _ctx(searchers={"bm25": ListSearcher("bm25", [a] + [f"x{i}" for i in range(20)])})
    assert title in draft.question
    verdict = ShortcutValidator().check(draft.model_copy(update={"answer_chunk_id": None}), ctx)
    assert verdict.ok and verdict.figures["seed_passages"] == [a] and verdict.figures["hidden_passages"] == [b]
    unnamed = draft.model_copy(update={"question": draft.question.replace(title, "an old place")})
    verdict = ShortcutValidator().check(unnamed, ctx)
    assert verdict.figures["seed_passages"] == [] and verdict.figures["hidden_passages"] == [a, b]
    assert verdict.ok  # A is hidden now and found: one of two hidden passages is not "most"
    both = _ctx(searchers={"bm25": ListSearcher("bm25", [a, b])})
    assert ShortcutValidator().check(unnamed, both).reason == "answer_passage_found"


def test_shortcut_without_searchers_is_skipped_not_passed():
    draft = clean_cases("en", 1)[0].draft
    verdict = ShortcutValidator().check(draft, _ctx())
    assert verdict.skipped and not verdict.ok


def test_shortcut_reports_missing_searchers():
    draft = clean_cases("en", 1)[0].draft
    verdict = ShortcutValidator().check(draft, _ctx(searchers={"bm25": ListSearcher("bm25", [])}))
    assert verdict.ok and verdict.figures["missing_searchers"] == ["dense", "hybrid"]


@pytest.mark.parametrize(
    "answer, answer_type, ok, lang",
    [
        ("Vellmoor", "place", True, "en"),
        ("J. R. R. Tolkien", "person", True, "en"),
        ("St. Petersburg", "place", True, "en"),
        ("Love Is a Stranger", "work", True, "en"),
        ("Moscow State University named after M. V. Lomonosov", "organisation", True, "en"),
        ("He was the founder of it", "person", False, "en"),
        ("Edmund Carrow. He founded the works in 1834.", "person", False, "en"),
        # a reference comparison answer the suffix's dot once made a sentence
        ("George Walton Lucas Jr.", "person", True, "en"),
        ("Warner Bros. Entertainment Inc.", "organisation", True, "en"),
        ("Martin Luther King Jr. Day", "other", True, "en"),  # a suffix's dot inside a name
        ("The Walt Disney Co. Ltd. Japan", "organisation", True, "en"),
        ("He founded the works in 1834.", "person", False, "en"),
        ("Он родился в Туле в 1834 г.", "person", False, "ru"),
        ("Этот завод основан им.", "organisation", False, "ru"),
        ("one two three four five six seven eight nine", "other", False, "en"),
        # a draw 7 answer the initial's dot once made a sentence
        ("Татарский государственный академический театр имени Г. Камала", "organisation", True, "ru"),
        ("Театр им. Г. Камала", "organisation", True, "ru"),
        ("Арсланов. Он служил в театре с 1956 года", "person", False, "ru"),
    ],
)
def test_schema_answer_shape(answer, answer_type, ok, lang):
    draft = clean_cases(lang, 1)[0].draft
    draft = draft.model_copy(update={"answer": answer, "cell": draft.cell.model_copy(update={"answer_type": answer_type})})
    assert SchemaValidator().check(draft, make_context(chunk_texts(lang))).ok is ok


def test_schema_single_hop_mechanics_may_have_one_chunk():
    draft = clean_cases("en", 1)[0].draft
    single = draft.model_copy(update={"support_chunk_ids": [draft.answer_chunk_id]})
    assert SchemaValidator().check(single, _ctx()).reason == "not_multi_hop"
    relaxed = _ctx(settings=ValidateSettings(single_hop_mechanics=["chain"]))
    # one chunk must also carry the question's words
    assert SchemaValidator().check(single, relaxed).reason == "question_ungrounded"
    own = single.model_copy(update={"question": "Which event made the ironworks founded by Edmund Carrow move its furnaces?"})
    assert SchemaValidator().check(own, relaxed).ok


@pytest.mark.parametrize(
    "update, reason",
    [
        ({"question": "Combine the clues."}, "question_too_short"),
        ({"question": "Which quiet thing did the old friendly neighbour eventually prefer?"}, "question_ungrounded"),
        ({"answer_aliases": ["what this step establishes"]}, "prompt_echo"),
        ({"question": "..."}, "prompt_echo"),
        ({"answer_aliases": ["the flood that moved the furnaces of the ironworks to higher ground"]}, "alias_too_long"),
    ],
)
def test_schema_refuses_vague_ungrounded_or_copied_drafts(update, reason):
    draft = clean_cases("en", 1)[0].draft.model_copy(update=update)
    verdict = SchemaValidator().check(draft, _ctx())
    assert not verdict.ok and verdict.reason == reason and verdict.feedback


def test_dedup_rejects_a_known_task_before_any_costly_check_and_skips_outside_a_run():
    from factory.task_similarity import TaskDeduper

    draft = clean_cases("en", 1)[0].draft
    validators = build_validators(ValidateSettings().order)
    assert [v.name for v in validators][:2] == ["schema", "dedup"]  # right after the schema
    outside = run_gauntlet(draft, _ctx(), validators[:2])
    assert outside.passed and outside.skipped_names == ["dedup"]
    assert outside.verdicts[1].reason == "no_task_list"

    known = TaskDeduper()
    # the same question and answer, other passages
    known.add("t-same", draft.question, ["other-1", "other-2"], draft.answer, "en")
    known.add("t-later", "An unrelated question about rivers and their bridges", draft.support_chunk_ids, "Avon", "en")
    later = Recorder("closed_book")
    ctx = _ctx()
    ctx.duplicate_of = lambda q, s, a: known.find(q, s, a, "en", among={"t-same"})
    result = run_gauntlet(draft, ctx, [*validators[:2], later])
    assert result.failure.validator == "dedup" and result.failure.reason == "near_duplicate_question"
    assert result.failure.figures["of"] == "t-same" and later.seen == 0
    # a task accepted after the draw is not among those the candidate knows: the driver finds it when settling
    ctx.duplicate_of = lambda q, s, a: known.find("Which old mill stood by the second ford?", s, a, "en",
                                                  among={"t-same"})
    assert run_gauntlet(draft, ctx, [*validators[:2], later]).passed and later.seen == 1
    ctx.duplicate_of = lambda q, s, a: known.find("Which old mill stood by the second ford?", s, a, "en",
                                                  among={"t-same", "t-later"})
    assert run_gauntlet(draft, ctx, validators[:2]).failure.reason == "same_support"


def test_the_keyword_query_leaves_out_words_that_only_ask():
    """'Назовите' is rare in news, so it took a keyword's place; a solver would not type it."""
    from types import SimpleNamespace

    from factory.records import Cell, Draft
    from factory.validate.shortcut import keyword_query

    freq = {"назовите": 1, "чьё": 2, "регион": 50, "голосование": 9, "статусе": 7, "отвергли": 5, "наблюдатели": 6}
    bm25 = SimpleNamespace(doc_freq=lambda word: freq.get(word.lower(), 0))
    ctx = SimpleNamespace(searchers={"bm25": bm25})
    draft = Draft(draft_id="d", candidate_id="c", lang="ru", cell=Cell.parse("chain/direct/place"),
                  question="Назовите регион, чьё голосование о статусе отвергли наблюдатели", answer="Крым",
                  support_chunk_ids=["a_0", "b_0"], answer_chunk_id="b_0")
    assert keyword_query(draft, (), ctx, 3) == "статусе отвергли наблюдатели"
    assert keyword_query(draft, ("наблюдатели",), ctx, 3) == "голосование статусе отвергли"  # a name it may use
