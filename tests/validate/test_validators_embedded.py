"""The LLM-based validators with the embedded model (SmolLM2-135M through llama.cpp).

Reported, not gated: the model is tiny, so the catch and false-reject rates are what
they are. Cases: closed-book on world-knowledge questions (should be caught) and on
questions about the fictional fixture corpus (should pass); solvability on fixture
questions with the right support (should pass) and with support that lacks the
answer (should be caught); necessity with and without an unrelated extra chunk.

FACTORY_EMBEDDED_CASES (default 2) sets how many cases of each kind run; the figures
in the report come from a run with 8 (and fewer samples than the defaults, see below).
"""

from __future__ import annotations

import json
import os

import pytest

from factory.records import Cell, Draft
from factory.settings import ValidateSettings
from factory.validate.closed_book import ClosedBookValidator
from factory.validate.necessity import NecessityValidator
from factory.validate.solvability import SolvabilityValidator

from conftest import make_context
from planted_drafts import chunk_texts

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600), pytest.mark.usefixtures("embedded_runtime")]  # a tiny model, but CPU-bound on a shared machine
CASES = int(os.environ.get("FACTORY_EMBEDDED_CASES", "2"))

WORLD = [
    ("What is the capital of France?", "Paris"),
    ("Who wrote the play Hamlet?", "William Shakespeare"),
    ("What is the largest planet in the Solar System?", "Jupiter"),
    ("In which year did the Second World War end?", "1945"),
    ("What is the capital of Japan?", "Tokyo"),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci"),
    ("Which ocean lies between Europe and North America?", "Atlantic Ocean"),
    ("What is the chemical symbol for gold?", "Au"),
]

# (question, answer, support, answer chunk, unrelated chunks holding no answer)
FIXTURE = [
    ("In which year was the bridge named after the founder of the Ashkel Valley Ironworks first opened?", "1852",
     ["en_person_007_0", "en_bridge_carrow_0"], "en_bridge_carrow_0", ["en_lake_tessaly_0", "en_mount_orrin_0"]),
    ("How many people did the shipping company that bought the Ashkel Valley Ironworks employ in 2020?", "1,900",
     ["en_org_avi_0", "en_org_greyl_line_0"], "en_org_greyl_line_0", ["en_place_kell_0", "en_person_lind_0"]),
    ("What is the height of the highest peak of the hills where the River Ashkel rises?", "1,742 metres",
     ["en_river_ashkel_0", "en_mount_orrin_0"], "en_mount_orrin_0", ["en_event_tessaly_open_0", "en_org_avi_0"]),
    ("In which year was the society founded by the cartographer who first mapped the source of the River Ashkel "
     "founded?", "1879", ["en_river_ashkel_0", "en_org_ncs_0"], "en_org_ncs_0",
     ["en_person_pretch_0", "en_place_dunmere_0"]),
    ("Who directed the film of the novel whose author was among the first women admitted to Halbridge College?",
     "Tobias Fenn", ["en_college_halbridge_0", "en_work_glass_orchard_0"], "en_work_glass_orchard_0",
     ["en_river_greyl_0", "en_bridge_carrow_0"]),
    ("How many members does the choir founded by the composer of the Ashkel Suite have?", "90",
     ["en_person_lind_0", "en_org_choral_union_0"], "en_org_choral_union_0", ["en_place_kell_0", "en_org_ncs_0"]),
    ("What was the 2020 population of the town where the Tessaly Open is held?", "12,750",
     ["en_event_tessaly_open_0", "en_place_dunmere_0"], "en_place_dunmere_0",
     ["en_mount_orrin_0", "en_person_fenn_0"]),
    ("In which town was the director of the film adaptation of The Glass Orchard born?", "Port Sallow",
     ["en_work_glass_orchard_0", "en_person_fenn_0"], "en_person_fenn_0", ["en_lake_tessaly_0", "en_org_avi_0"]),
]


def _draft(i, question, answer, support, answer_chunk):
    return Draft(draft_id=f"emb-{i}", candidate_id=f"emb-{i}", lang="en", question=question, answer=answer,
                 cell=Cell(mechanic="chain", form="direct", answer_type="other"), support_chunk_ids=support,
                 answer_chunk_id=answer_chunk)


@pytest.fixture(scope="module")
def embedded_ctx():
    from factory.llm.registry import make_llm

    try:
        llm = make_llm("llamacpp:smollm2-135m")
    except Exception as exc:  # the embedded model is an optional extra
        pytest.fail(f"the embedded model is not available: {exc}")
    # fewer samples than the defaults (3/3/2) to keep CPU time bounded; stated in the report
    settings = ValidateSettings(closed_book_samples=3, solvability_samples=1, necessity_samples=1)
    return make_context(chunk_texts("en"), llm=llm, settings=settings)


def _rate(verdicts):
    return sum(not v.ok for v in verdicts)


def test_closed_book_embedded(embedded_ctx):
    world = [_draft(i, q, a, ["en_place_001_0", "en_river_ashkel_0"], "en_river_ashkel_0")
             for i, (q, a) in enumerate(WORLD[:CASES])]
    fictional = [_draft(100 + i, q, a, s, c) for i, (q, a, s, c, _) in enumerate(FIXTURE[:CASES])]
    caught = [ClosedBookValidator().check(d, embedded_ctx) for d in world]
    clean = [ClosedBookValidator().check(d, embedded_ctx) for d in fictional]
    print(json.dumps({"validator": "closed_book", "model": "smollm2-135m", "defects": len(world),
                      "caught": _rate(caught), "clean": len(clean), "false_rejects": _rate(clean),
                      "answers": [v.figures.get("answers") for v in caught + clean]}))
    assert all(v.reason != "llm_error" for v in caught + clean)


def test_solvability_embedded(embedded_ctx):
    right = [_draft(i, q, a, s, c) for i, (q, a, s, c, _) in enumerate(FIXTURE[:CASES])]
    wrong = [_draft(200 + i, q, a, o, o[0]) for i, (q, a, _, _, o) in enumerate(FIXTURE[:CASES])]
    clean = [SolvabilityValidator().check(d, embedded_ctx) for d in right]
    caught = [SolvabilityValidator().check(d, embedded_ctx) for d in wrong]
    print(json.dumps({"validator": "solvability", "model": "smollm2-135m", "samples": 1, "defects": len(wrong),
                      "caught": _rate(caught), "clean": len(clean), "false_rejects": _rate(clean),
                      "answers": [v.figures.get("answers") for v in clean + caught]}))
    assert all(v.reason != "llm_error" for v in caught + clean)


def test_necessity_embedded(embedded_ctx):
    n = max(1, CASES // 2)
    plain = [_draft(300 + i, q, a, s, c) for i, (q, a, s, c, _) in enumerate(FIXTURE[:n])]
    padded = [_draft(400 + i, q, a, s + o[:1], c) for i, (q, a, s, c, o) in enumerate(FIXTURE[:n])]
    clean = [NecessityValidator().check(d, embedded_ctx) for d in plain]
    noisy = [NecessityValidator().check(d, embedded_ctx) for d in padded]
    caught = sum(1 for d, v in zip(padded, noisy) if d.support_chunk_ids[-1] in v.figures.get("decorative", []))
    print(json.dumps({"validator": "necessity", "model": "smollm2-135m", "samples": 1, "defects": len(padded),
                      "caught": caught, "clean": len(clean), "false_rejects": _rate(clean),
                      "decorative": [v.figures.get("decorative") for v in clean + noisy]}))
    assert all(v.reason != "llm_error" for v in clean + noisy)
