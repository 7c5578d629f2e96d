"""The LLM-based validators' logic, driven by scripted fakes (FakeLLM with callable replies).

The fakes stand for two kinds of model: one that 'knows' some facts without evidence
(closed-book), and a reader that can answer only when every chunk a draft truly needs
is in its prompt (solvability, necessity).
"""

from __future__ import annotations

import json
import re

import pytest

from factory.llm.fake import FakeLLM
from factory.llm.types import LLMRequest, LLMResponse
from factory.settings import ValidateSettings
from factory.validate.agent_run import AgentRunValidator
from factory.validate.closed_book import ClosedBookValidator
from factory.validate.necessity import NecessityValidator
from factory.validate.solvability import SolvabilityValidator

from conftest import make_context
from planted_drafts import chunk_texts, clean_cases


def _prompt(request: LLMRequest) -> str:
    return request.messages[-1].content or ""


def _question(prompt: str) -> str:
    match = re.search(r"(?:Question|Вопрос): (.*)", prompt)
    return match.group(1).strip() if match else ""


class Reader:
    """Answers a question when the evidence holds every chunk it needs; can be told to hedge."""

    def __init__(self, needs: dict[str, set[str]], answers: dict[str, str], alternatives=None, broken=()):
        self.needs, self.answers = needs, answers
        self.alternatives = alternatives or {}
        self.broken = set(broken)

    def __call__(self, request: LLMRequest):
        prompt = _prompt(request)
        question = _question(prompt)
        if question in self.broken:
            return "I think the answer is probably in the passages"  # not JSON
        given = set(re.findall(r"^\[([^\]]+)\]", prompt, re.MULTILINE))
        solved = self.needs.get(question, {"?"}) <= given
        return {"reasoning": "following the passages", "answer": self.answers[question] if solved else "unknown",
                "other_answers": self.alternatives.get(question, [])}


def _contexts(lang, llm, **settings):
    return make_context({c: v for c, v in chunk_texts(lang).items()}, llm=llm,
                        settings=ValidateSettings(**settings))


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_closed_book_planted_trivial_facts(lang):
    """50 drafts whose answer the 'knowing' fake gives without evidence, 50 it cannot."""
    cases = list({c.draft.question: c for c in clean_cases(lang, 300, seed=31)}.values())[:100]
    assert len(cases) == 100
    trivial = {c.draft.question: c.draft.answer for c in cases[:50]}

    def knowing(request: LLMRequest):
        question = _question(_prompt(request))
        return {"answer": trivial.get(question, "unknown")}

    ctx = _contexts(lang, FakeLLM(default=knowing))
    verdicts = [ClosedBookValidator().check(c.draft, ctx) for c in cases]
    caught = sum(not v.ok for v in verdicts[:50])
    false = sum(not v.ok for v in verdicts[50:])
    print(json.dumps({"validator": "closed_book[fake]", "lang": lang, "caught": caught, "of": 50, "false_rejects": false}))
    assert caught == 50 and false == 0
    assert verdicts[0].reason == "closed_book_solved" and verdicts[0].figures["hits"] == 3
    assert trivial[cases[0].draft.question] in verdicts[0].feedback


def test_closed_book_samples_are_distinct_requests_and_raw_text_counts():
    case = clean_cases("en", 1)[0]
    llm = FakeLLM(script=["no idea", f"It must be {case.draft.answer}, surely", f"Surely {case.draft.answer}"])
    ctx = _contexts("en", llm, closed_book_samples=3)
    verdict = ClosedBookValidator().check(case.draft, ctx)
    assert [r.sample_index for r in llm.requests] == [0, 1, 2]
    assert len({r.key() for r in llm.requests}) == 3  # three cache keys, three real samples
    assert [r.sampling.temperature for r in llm.requests] == [0.0, 0.7, 0.7]  # the first greedy
    assert not verdict.ok and verdict.figures["hits"] == 2  # an unparsable reply is matched on its text


def test_closed_book_tolerance_greedy_hit_partial_guess_and_errors():
    case = clean_cases("en", 1)[0]
    answer = case.draft.answer
    lucky = FakeLLM(script=[{"answer": "x"}, {"answer": answer}, {"answer": "y"}])  # one sampled guess is luck
    assert ClosedBookValidator().check(case.draft, _contexts("en", lucky)).ok
    greedy = FakeLLM(script=[{"answer": answer}, {"answer": "x"}, {"answer": "y"}])  # its own best answer knows it
    verdict = ClosedBookValidator().check(case.draft, _contexts("en", greedy))
    assert not verdict.ok and verdict.figures["greedy_hit"]
    strict = FakeLLM(script=[{"answer": "x"}, {"answer": answer}, {"answer": "y"}])
    assert not ClosedBookValidator().check(case.draft, _contexts("en", strict, closed_book_max_hits=0)).ok
    person = clean_cases("en", 300, seed=3)
    two_words = next(c for c in person if len(c.draft.answer.split()) >= 2)
    last = two_words.draft.answer.split()[-1]
    part = FakeLLM(default={"answer": last})  # 'Smith' for 'John Smith': a guess at part of it, not a hit
    verdict = ClosedBookValidator().check(two_words.draft, _contexts("en", part))
    assert verdict.ok and verdict.figures["matches"] == ["partial"] * 3
    failing = FakeLLM(default=LLMResponse(error="connection refused"))
    verdict = ClosedBookValidator().check(case.draft, _contexts("en", failing))
    assert not verdict.ok and verdict.reason == "llm_error" and not verdict.skipped


def test_closed_book_llm_judge_only_when_enabled():
    case = clean_cases("en", 1)[0]

    def model(request: LLMRequest):
        if "Reference answer" in _prompt(request):
            return {"same": True}
        return {"answer": "the one everybody knows"}

    plain = ClosedBookValidator().check(case.draft, _contexts("en", FakeLLM(default=model)))
    judged = ClosedBookValidator().check(case.draft, _contexts("en", FakeLLM(default=model), llm_judge=True))
    assert plain.ok
    assert not judged.ok and judged.figures["matches"] == ["judge"] * 3


def _reader_setup(lang, n):
    """n clean drafts and n with an unrelated extra chunk; every question distinct (the reader keys on it)."""
    pool = list({c.draft.question: c for c in clean_cases(lang, 12 * n, seed=41)}.values())
    assert len(pool) >= 2 * n
    clean, noisy = pool[:n], pool[n : 2 * n]
    needs = {c.draft.question: set(c.draft.support_chunk_ids) for c in pool[: 2 * n]}
    answers = {c.draft.question: c.draft.answer for c in pool[: 2 * n]}
    chunk_pool = sorted(chunk_texts(lang))
    extra = {}
    for i, case in enumerate(noisy):
        d = case.draft
        spare = next(c for c in chunk_pool[i % len(chunk_pool):] + chunk_pool if c not in d.support_chunk_ids)
        d.support_chunk_ids = [*d.support_chunk_ids, spare]
        extra[d.draft_id] = spare
    return clean, noisy, needs, answers, extra


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_solvability_and_necessity_planted(lang):
    clean, noisy, needs, answers, extra = _reader_setup(lang, 50)
    ctx = _contexts(lang, FakeLLM(default=Reader(needs, answers)))
    assert all(SolvabilityValidator().check(c.draft, ctx).ok for c in clean + noisy)
    clean_verdicts = [NecessityValidator().check(c.draft, ctx) for c in clean]
    noisy_verdicts = [NecessityValidator().check(c.draft, ctx) for c in noisy]
    caught = sum(not v.ok and v.figures["decorative"] == [extra[c.draft.draft_id]] for c, v in zip(noisy, noisy_verdicts))
    false = sum(not v.ok for v in clean_verdicts)
    print(json.dumps({"validator": "necessity[fake]", "lang": lang, "caught": caught, "of": 50, "false_rejects": false}))
    assert caught == 50 and false == 0
    assert all(not v.hard for v in noisy_verdicts)  # soft: the loop prunes


def test_solvability_rejects_missing_step_ambiguity_and_parse_failures():
    cases = clean_cases("en", 3, seed=43)
    a, b, c = (x.draft for x in cases)
    needs = {a.question: set(a.support_chunk_ids) | {"en_mount_orrin_0"},  # needs a chunk not cited
             b.question: set(b.support_chunk_ids), c.question: set(c.support_chunk_ids)}
    answers = {x.question: x.answer for x in (a, b, c)}
    reader = Reader(needs, answers, alternatives={b.question: ["Somewhere Else"]}, broken={c.question})
    ctx = _contexts("en", FakeLLM(default=reader))
    missing = SolvabilityValidator().check(a, ctx)
    ambiguous = SolvabilityValidator().check(b, ctx)
    broken = SolvabilityValidator().check(c, ctx)
    assert (missing.ok, missing.reason) == (False, "not_solvable")
    assert (ambiguous.ok, ambiguous.reason) == (False, "ambiguous") and "Somewhere Else" in ambiguous.feedback
    assert (broken.ok, broken.reason) == (False, "not_solvable")  # an unparsable reply is no derivation


def test_solvability_alternative_equal_to_reference_is_not_ambiguity():
    case = clean_cases("en", 1, seed=44)[0].draft
    reader = Reader({case.question: set(case.support_chunk_ids)}, {case.question: case.answer},
                    alternatives={case.question: [case.answer.upper()]})
    assert SolvabilityValidator().check(case, _contexts("en", FakeLLM(default=reader))).ok


def test_solvability_majority_rule():
    case = clean_cases("en", 1, seed=45)[0].draft
    good = {"answer": case.answer, "other_answers": []}
    bad = {"answer": "unknown", "other_answers": []}
    two_of_three = FakeLLM(script=[good, bad, good])
    one_of_three = FakeLLM(script=[good, bad, bad])
    assert SolvabilityValidator().check(case, _contexts("en", two_of_three)).ok
    assert not SolvabilityValidator().check(case, _contexts("en", one_of_three)).ok


class EasyChecker:
    """A difficulty checker stand-in that reports a fixed outcome (the real one needs an agent)."""

    def __init__(self, too_easy: bool):
        self.too_easy = too_easy
        self.calls = []

    def check(self, question, gold_chunk_ids, item_id):
        from factory.agent.difficulty import DifficultyReport

        self.calls.append((question, list(gold_chunk_ids), item_id))
        return DifficultyReport(item_id=item_id, rollouts=2, recall=1.0, mean_recall=1.0, trajectory_recall=1.0,
                                first_round_recall=1.0, searches=2.0, rounds=1.0, easy_rollouts=2 if self.too_easy else 0,
                                too_easy=self.too_easy, queries=["carrow ironworks founder", "vellmoor bridge"])


def test_agent_run_is_skipped_not_passed_when_off():
    case = clean_cases("en", 1)[0].draft
    verdict = AgentRunValidator().check(case, _contexts("en", None, agent_run=False))
    assert verdict.skipped and not verdict.ok and not verdict.hard and verdict.reason == "disabled"
    on = _contexts("en", None, agent_run=True)
    verdict = AgentRunValidator().check(case, on)
    assert verdict.skipped and verdict.reason == "no_difficulty_checker"


def test_agent_run_too_easy_feeds_back_queries():
    case = clean_cases("en", 1)[0].draft
    ctx = _contexts("en", None, agent_run=True)
    ctx.difficulty = EasyChecker(too_easy=True)
    verdict = AgentRunValidator().check(case, ctx.for_item("cand-1"))
    assert not verdict.ok and verdict.reason == "too_easy" and "carrow ironworks founder" in verdict.feedback
    assert ctx.difficulty.calls[0][2] == "cand-1"
    ctx.difficulty = EasyChecker(too_easy=False)
    assert AgentRunValidator().check(case, ctx).ok
