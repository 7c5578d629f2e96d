"""The gauntlet against the strong-writer reference set, on the shared corpora (BM25).

The model-free validators (schema, answerable, leakage, shortcut) judge every reference
candidate's drafts as the loop would; adversarial drafts made from the same set must be
refused. See bench/acceptance.py for the full report (with --dense, dense and hybrid too).

The set is draw 4 (tests/fixtures/reference_drafts/LANG.jsonl, seed 37): 40 candidates
per language in draw order, drafted by hand from the composer's worksheets before any
verdict, then revised at most twice in answer to the feedback. What is guarded:
* the issue's goal of 60% of all candidates accepted within two revisions (a subgraph
  its writer found no honest question for counts as refused), and every honest draft
  kept but for one in twenty;
* the first-draft share, which is below the issue's goal of 30% (en 25%, ru 2.5%): it
  is held at what was measured, so that it cannot fall unnoticed;
* single-hop template questions, leaky multi-hop drafts and planted defects in the
  accepted drafts refused at least 95%.
Russian has no comparison: the selector refuses it on a corpus that is not made of
articles, so those draws are selection failures outside the 40.

Draws 5 (LANG-draw5.jsonl, seed 43) and 6 (LANG-draw6.jsonl, seed 47) were drawn and
drafted after the composer was given its shared-word budget (5% and two words for draw 5,
10% and three for draw 6), and revised against the default searchers (BM25, dense,
hybrid); they are judged here with BM25 and held at what was measured. Draw 6 misses the
60% goal in English (23 of 40) because its writers found no honest question for 16 of its
subgraphs; 23 of its 24 honest drafts are kept. Draw 7 (LANG-draw7.jsonl, seed 53) was drawn
with the one-word-name screen, drafted by eight writers from the worksheets and revised
against the default searchers; its writers found no honest question for 20 English and 16
Russian subgraphs, so it misses 60% in both languages (17 and 20 of 40 with BM25). Draw 8
(LANG-draw8.jsonl, seed 59) was drawn with the work-attestation and label-doubt screens and
revised twice against the default searchers (every refused draft, or given up): its writers
found no honest question for 23 English and 14 Russian subgraphs (9 and 11 first drafts of 40
accepted with BM25, 15 and 22 within the revisions). Draw 9 (LANG-draw9.jsonl, seed 61) was
drawn with the reference-date preference and before the polity and organisation rules; its
writers found no honest question for 20 subgraphs in each language (10 and 7 first drafts
accepted with BM25, 17 and 17 within the revisions; four Russian candidates got their
second revision a session later). Draw 10 (LANG-draw10.jsonl, seed 67) was drawn with every selection rule, the person
rules included; its writers found no honest question for 29 English and 27 Russian subgraphs
(8 and 6 first drafts accepted with BM25, 11 and 12 within the revisions). Its declined
candidates were then followed as the loop follows a composer's decline: each got the
subgraph the loop draws next for its cell, twice at most (LANG-draw10-reselectN.jsonl),
written by new writers from the same briefs and revised the same way.

Draw 10 was then written again (LANG-draw10-rewrite.jsonl, and its reselections
LANG-draw10-rewrite-reselectN.jsonl) by new writers under the composer's revised decline rule:
a place or an organisation two passages share is a bridge, and only a false link, a known,
wrong-kind or non-unique answer, or values that date nothing or cannot be combined make a
subgraph one without an honest question. A blind relabelling had shown the old wording, not
the selectors, behind most declines (tests/test_reference_agreement.py). Draw 11
(LANG-draw11.jsonl, seed 71, and its reselections) was drawn and written under that rule from
the start: it misses the goals in English (7 / 12 of 40; 13 / 20 with the reselections) and in
Russian without the reselections (10 / 22; 17 / 34 with them), and is held at what was measured.
Draw 12 (LANG-draw12.jsonl, seed 73, and its reselections) was drawn after the title,
figure-year, kind and initials rules and written the same way: with its reselections it meets
both goals in both languages (English 19 / 29, Russian 14 / 33), and Russian meets them without
(12 / 25); English does not (10 / 17). Held at what was measured, which is at or above the
goals where they are met.
Draw 13 (LANG-draw13.jsonl, seed 79, and its reselections) was drawn after the list, clue,
fragment and award rules and written the same way; its second English reselections after the
place-head and regnal-numeral kinds. Russian meets both goals without reselection (14 / 26)
and with it (20 / 36); English misses them (5 / 12: its writers found 12 honest subgraphs of
40), and with the reselections meets the second goal only (9 / 25).
Draw 14 (en-draw14.jsonl, seed 83, English only, and its reselections) was drawn after the
place-head and regnal-numeral kinds, the widened list rule and the revised comparison
guidance: 8 / 12 alone (again 12 honest subgraphs of 40), 15 / 25 with the reselections,
above both goals. Draws 15 on were drawn with the refused answers of the earlier ones in the
store, draws 16 on with the declined-overlap rule for their reselections.

One draw of 40 moves by several candidates from seed to seed (English with the reselections:
22 to 32 within two revisions over draws 12-17), so the goals are held on the pool: every draw
written under the revised decline rule (draw 10 written again, then 11 on), each with its
reselection rounds, as ``python -m bench.acceptance --pool`` reports it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

WITHIN_2 = 0.6  # the goal, over all candidates
FIRST = {"en": 10, "ru": 1}  # of 40, measured on draw 4; the goal (12 of 40) is not met
# later draws, judged with BM25: (accepted at the first draft, within two revisions) of 40, measured
LATER = {("draw5", "en"): (14, 28), ("draw5", "ru"): (5, 31), ("draw6", "en"): (8, 23), ("draw6", "ru"): (7, 25),
         ("draw7", "en"): (8, 17), ("draw7", "ru"): (5, 20), ("draw8", "en"): (9, 15), ("draw8", "ru"): (11, 22),
         ("draw9", "en"): (10, 17), ("draw9", "ru"): (7, 17), ("draw10", "en"): (8, 11), ("draw10", "ru"): (6, 12),
         ("draw11", "en"): (7, 12), ("draw11", "ru"): (10, 22), ("draw12", "en"): (10, 17),
         ("draw12", "ru"): (12, 25), ("draw13", "en"): (5, 12), ("draw13", "ru"): (14, 26),
         ("draw14", "en"): (8, 12), ("draw14", "ru"): (13, 29), ("draw15", "en"): (6, 10),
         ("draw16", "en"): (10, 16), ("draw17", "en"): (3, 12)}
# draw 10 when a declined subgraph is followed by its reselections (two rounds), judged with BM25:
# (accepted at the first question written, within two revisions) of 40, measured
RESELECTED = {("draw10", "en"): (12, 19), ("draw10", "ru"): (12, 20), ("draw11", "en"): (13, 20),
              ("draw11", "ru"): (17, 34), ("draw12", "en"): (19, 29), ("draw12", "ru"): (14, 33),
              ("draw13", "en"): (9, 25), ("draw13", "ru"): (20, 36), ("draw14", "en"): (15, 25),
              ("draw14", "ru"): (18, 36), ("draw15", "en"): (10, 22), ("draw16", "en"): (19, 32),
              ("draw17", "en"): (16, 31)}
# every draw written under the revised decline rule, each with its reselection rounds: the goals
# hold on them together (measured: en 114 / 208 of 320, ru 88 / 174 of 200)
POOL = {"en": ["draw10-rewrite", "draw11", "draw12", "draw13", "draw14", "draw15", "draw16", "draw17"],
        "ru": ["draw10-rewrite", "draw11", "draw12", "draw13", "draw14"]}
# draw 10 written again by new writers under the composer's revised decline rule (a place or an
# organisation both passages mention is a bridge), alone and with its own reselections; the
# Russian set meets the goals without reselection and is held to them
REWRITE = "draw10-rewrite"
REWRITE_ROUNDS = ["draw10-rewrite-reselect1", "draw10-rewrite-reselect2"]
REWRITTEN = {"en": (10, 17), "ru": (13, 26)}
REWRITTEN_RESELECTED = {"en": (13, 24), "ru": (19, 35)}
GOALS_MET = {"ru"}  # without reselection; with the loop's reselections both languages meet them
MECHANICS = {"en": {"chain", "intersection", "temporal", "comparison", "calculation"},
             "ru": {"chain", "intersection", "temporal", "calculation"}}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, shared_corpora: Path):
    """(store, fixed index, settings) per language, built once for every draw judged here."""
    from bench.acceptance import prepare

    work = tmp_path_factory.mktemp("acceptance")
    built: dict[str, tuple] = {}

    def get(lang: str) -> tuple:
        if lang not in built:
            built[lang] = prepare(lang, work)
        return built[lang]

    return get


# each draw judged once per test module run, alone and with its reselection rounds (the tests
# only read the judgements)
_ALONE: dict[tuple[str, str], list] = {}
_WITH_RESELECTIONS: dict[tuple[str, str], list] = {}


def with_reselections(prepared, lang: str, name: str) -> list:
    """The draw judged as the loop runs it (its reselection rounds)."""
    from bench.acceptance import judge_with_reselections, reselection_rounds

    if (lang, name) not in _WITH_RESELECTIONS:
        _WITH_RESELECTIONS[(lang, name)] = judge_with_reselections(
            lang, *prepared(lang), name, reselection_rounds(lang, name), judged_set(prepared, lang, name)[0])
    return _WITH_RESELECTIONS[(lang, name)]


def judged_set(prepared, lang: str, name: str = "") -> tuple[list, list]:
    """Every reference candidate of the set as judged, and those with a subgraph."""
    from bench.acceptance import judge_reference

    if (lang, name) not in _ALONE:
        _ALONE[(lang, name)] = judge_reference(lang, *prepared(lang), name)
    judged = _ALONE[(lang, name)]
    return judged, [j for j in judged if j.status != "no_subgraph"]


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_gauntlet_keeps_the_honest_reference_drafts_and_refuses_the_adversarial_ones(lang: str, prepared) -> None:
    from bench.acceptance import adversarial, single_hop

    store, index, settings = prepared(lang)
    judged, candidates = judged_set(prepared, lang)
    drafted = [j for j in candidates if j.status == "drafted"]
    assert len(candidates) == 40 and {j.cell.split("/")[0] for j in candidates} == MECHANICS[lang]
    refused = [(j.index, j.reason) for j in drafted if not j.within(2)]
    assert sum(j.within(2) for j in drafted) >= 0.95 * len(drafted), refused
    assert sum(j.within(2) for j in candidates) >= math.ceil(WITHIN_2 * len(candidates)), refused
    assert sum(j.first for j in candidates) >= FIRST[lang], [
        (j.index, j.reason) for j in drafted if not j.first]
    assert all(j.accepted_at is None or j.status == "drafted" for j in judged)

    hop = single_hop(lang, store, index, settings)
    assert hop["n"] >= 100 and hop["share"] >= 0.95, hop
    made = adversarial(lang, judged, store, index, settings)
    assert made["leaky"]["n"] >= 20 and made["leaky"]["share"] >= 0.95, made["leaky"]
    assert made["planted"]["n"] >= 9 and made["planted"]["share"] >= 0.95, made["planted"]


@pytest.mark.parametrize("name,lang", sorted(LATER))
def test_later_draws_hold_what_was_measured(name: str, lang: str, prepared) -> None:
    judged, candidates = judged_set(prepared, lang, name)
    first, within_2 = LATER[(name, lang)]
    assert len(candidates) == 40
    assert sum(j.within(2) for j in candidates) >= within_2, [
        (j.index, j.reason) for j in candidates if j.status == "drafted" and not j.within(2)]
    assert sum(j.first for j in candidates) >= first
    assert all(j.accepted_at is None or j.status == "drafted" for j in judged)


@pytest.mark.parametrize("name,lang", sorted(RESELECTED))
def test_draws_with_the_loops_reselections_hold_what_was_measured(name: str, lang: str, prepared) -> None:
    """A decline costs the candidate nothing but a new subgraph: counted by its reselections'
    outcome (two rounds), draws 10-17 keep what was measured, and never fewer than without them."""
    from bench.acceptance import reselection_rounds

    assert len(reselection_rounds(lang, name)) == 2
    judged = with_reselections(prepared, lang, name)
    candidates = [j for j in judged if j.status != "no_subgraph"]
    first, within_2 = RESELECTED[(name, lang)]
    assert len(candidates) == 40
    assert sum(j.first for j in candidates) >= first
    assert sum(j.within(2) for j in candidates) >= within_2, [
        (j.index, j.reason) for j in candidates if j.status == "drafted" and not j.within(2)]
    assert sum(j.within(2) for j in candidates) >= LATER[(name, lang)][1]


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_draw_10_written_again_under_the_revised_decline_rule_holds_what_was_measured(lang: str, prepared) -> None:
    """The same 40 subgraphs as draw 10, written again from the worksheets by new writers under
    the composer's revised wording; Russian is held to the issue's goals (30% at the first
    draft, 60% within two revisions), English to what was measured. With the loop's reselections
    (two rounds, written and revised the same way) both languages are held to the goals."""
    from bench.acceptance import reselection_rounds

    judged, candidates = judged_set(prepared, lang, REWRITE)
    first, within_2 = REWRITTEN[lang]
    assert len(candidates) == 40
    kept = sum(j.within(2) for j in candidates)
    assert kept >= within_2, [(j.index, j.reason) for j in candidates if j.status == "drafted" and not j.within(2)]
    assert sum(j.first for j in candidates) >= first
    if lang in GOALS_MET:
        assert kept >= math.ceil(WITHIN_2 * 40) and sum(j.first for j in candidates) >= math.ceil(0.3 * 40)
    assert reselection_rounds(lang, REWRITE) == REWRITE_ROUNDS
    again = [j for j in with_reselections(prepared, lang, REWRITE) if j.status != "no_subgraph"]
    first, within_2 = REWRITTEN_RESELECTED[lang]
    assert len(again) == 40
    assert sum(j.first for j in again) >= max(first, math.ceil(0.3 * 40))
    assert sum(j.within(2) for j in again) >= max(within_2, kept, math.ceil(WITHIN_2 * 40)), [
        (j.index, j.reason) for j in again if j.status == "drafted" and not j.within(2)]


def test_comparisons_written_under_the_revised_guidance_hold_what_was_measured(prepared) -> None:
    """The 25 English comparison subgraphs of draws 12 and 13 (with their reselections),
    written again by new writers once the guidance let each candidate be picked out by a weak
    property of its own passage instead of an open group (LANG-comparisons.jsonl, index = 100 x
    set + the original index). Their first writers found 6 honest questions (4 / 6 kept with
    BM25); these found 13, all kept within two revisions."""
    _, candidates = judged_set(prepared, "en", "comparisons")
    assert len(candidates) == 25 and {j.cell.split("/")[0] for j in candidates} == {"comparison"}
    drafted = [j for j in candidates if j.status == "drafted"]
    assert len(drafted) == 13 and all(j.within(2) for j in drafted), [
        (j.index, j.reason) for j in drafted if not j.within(2)]
    assert sum(j.first for j in candidates) >= 7


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_pooled_reference_set_meets_the_goals(lang: str, prepared) -> None:
    """Every draw written under the revised decline rule, each as the loop runs it (a declined
    subgraph followed by its reselections): together they reach 30% at the first question
    written and 60% within two revisions, by every validator that runs without a model."""
    from bench.acceptance import reselection_rounds

    candidates = [j for name in POOL[lang] for j in with_reselections(prepared, lang, name) if j.status != "no_subgraph"]
    assert len(candidates) == 40 * len(POOL[lang])
    assert all(len(reselection_rounds(lang, name)) == 2 for name in POOL[lang])
    first = sum(j.first for j in candidates)
    within_2 = sum(j.within(2) for j in candidates)
    assert first >= math.ceil(0.3 * len(candidates)), (first, len(candidates))
    assert within_2 >= math.ceil(WITHIN_2 * len(candidates)), (within_2, len(candidates))
