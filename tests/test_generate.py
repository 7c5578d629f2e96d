"""The generation loop end to end over the English fixture corpus, with a scripted model world:
accept, revise, reject, prune, near-duplicates, resume after a crash, rejects visible while running."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from factory.generate import Job, make_context, run_candidate, run_generation
from factory.llm.gateway import Gateway
from factory.settings import Settings
from factory.store import Store
from factory.taxonomy import CellSampler, load_taxonomy

from generate_world import Crash, Plan, World, chain_only_taxonomy, world_settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "corpus_en.jsonl"


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The fixture corpus ingested (NER, entity statistics) and indexed once (BM25 only)."""
    from factory.index.fixed import build_index
    from factory.ingest import ingest

    root = tmp_path_factory.mktemp("generate")
    store = Store(root / "store")
    ingest(FIXTURE, store, "en", Settings())
    build_index(store, root / "index", "en", dense=None, progress=False)
    chain_only_taxonomy(ROOT / "taxonomy", root / "taxonomy")
    return root


@pytest.fixture()
def world_store(built, tmp_path):
    from factory.index.fixed import open_index

    shutil.copytree(built / "store", tmp_path / "store")
    store = Store(tmp_path / "store")
    return store, open_index(built / "index", store=store), load_taxonomy(built / "taxonomy")


def _run(world_store, plan, *, n=2, run_id="r1", gateway=False, **kw):
    store, index, taxonomy = world_store
    world = World(plan)
    llm = Gateway(world.llm(), store, run_id=run_id) if gateway else world.llm()
    summary = run_generation(store, index, llm, world_settings(), n=n, lang="en", run_id=run_id, seed=7,
                             taxonomy=taxonomy, **kw)
    return summary, world


def test_accept_path_writes_tasks_with_lineage(world_store):
    store, _, _ = world_store
    summary, _ = _run(world_store, Plan(), n=2)
    assert summary.accepted == 2 and summary.stopped_by == "target"
    tasks = store.query("SELECT * FROM accepted_tasks ORDER BY task_id")
    assert len(tasks) == 2
    for task in tasks:
        assert len(task["support_chunk_ids"]) >= 2 and task["answer_chunk_id"] in task["support_chunk_ids"]
        assert task["validators"] == ["schema", "dedup", "answerable", "leakage", "shortcut", "closed_book",
                                      "solvability", "necessity"]
        assert task["skipped_validators"] == ["agent_run"]  # off: skipped, never listed as passed
        assert task["revisions"] == 0
    verdicts = store.query("SELECT validator, ok, skipped FROM verdicts WHERE candidate_id = ? ORDER BY step",
                           [tasks[0]["candidate_id"]])
    assert [v["validator"] for v in verdicts][-1] == "agent_run" and verdicts[-1]["skipped"]
    funnel = {r["validator"]: r for r in store.query("SELECT * FROM funnel")}
    assert funnel["schema"]["seen"] >= 2 and funnel["agent_run"]["skipped"] >= 2
    assert funnel["agent_run"]["seen"] == 0


def test_revision_path_feeds_back_and_accepts(world_store):
    store, _, _ = world_store
    summary, _ = _run(world_store, Plan(compose="leak", revise="clean"), n=1)
    assert summary.accepted == 1 and summary.revisions == 1
    attempts = store.query("SELECT * FROM attempts ORDER BY attempt")
    assert [a["origin"] for a in attempts] == ["compose", "revise"]
    assert attempts[0]["failed_validator"] == "leakage" and attempts[0]["failed_reason"] == "answer_leaked"
    assert attempts[1]["parent_draft_id"] == attempts[0]["draft_id"] and attempts[1]["passed"]
    # the reviser was shown the leakage feedback
    revise_prompts = [r for r in store.query("SELECT feedback FROM verdicts WHERE validator = 'leakage' AND NOT ok")]
    assert revise_prompts and "gives away" in revise_prompts[0]["feedback"]


def test_reject_path_after_bounded_revisions(world_store):
    store, _, _ = world_store
    summary, _ = _run(world_store, Plan(compose="leak", revise="leak"), n=1, max_attempts=2)
    assert summary.accepted == 0 and summary.rejected == 2 and summary.stopped_by == "max_attempts"
    assert summary.rejected_by == {"leakage": 2}
    rejected = store.query("SELECT * FROM rejected_tasks ORDER BY candidate_id")
    assert len(rejected) == 2
    for row in rejected:
        assert row["validator"] == "leakage" and row["reason"] == "answer_leaked" and row["revisions"] == 2
        assert row["attempts"] == 3 and row["question"] and "gives away" in row["feedback"]
    assert store.scalar("SELECT count(*) FROM tasks") == 0


def test_a_decorative_chunk_of_a_two_chunk_chain_is_revised_not_pruned_away(world_store):
    """Pruning would leave the chain one passage: the reviser is asked to make the question need
    it instead; a reader that never needs it keeps it decorative until the revisions run out."""
    store, _, _ = world_store
    summary, _ = _run(world_store, Plan(reader_skips_first=True), n=1, max_attempts=1)
    assert summary.accepted == 0 and summary.prunes == 0 and summary.revisions == 2
    row = store.query("SELECT * FROM rejected_tasks")[0]
    assert (row["validator"], row["reason"]) == ("necessity", "decorative_chunks")
    origins = [r["origin"] for r in store.query("SELECT origin FROM drafts ORDER BY attempt")]
    assert origins == ["compose", "revise", "revise"]
    necessity = store.query("SELECT figures FROM verdicts WHERE validator = 'necessity'")[0]
    assert "decorative" in necessity["figures"]


def test_an_answer_known_without_evidence_reselects_a_subgraph_instead_of_revising(world_store):
    """A rewrite cannot make a known answer unknown: the loop draws another subgraph of the cell."""
    store, _, _ = world_store
    summary, world = _run(world_store, Plan(knows_first_answer=True), n=1, max_attempts=1)
    drafts = store.query("SELECT origin, answer, support_chunk_ids FROM drafts ORDER BY attempt")
    assert [d["origin"] for d in drafts] == ["compose", "reselect"] and summary.revisions == 0
    assert drafts[0]["answer"] == world.first_answer and drafts[1]["answer"] != world.first_answer
    assert set(drafts[0]["support_chunk_ids"]) != set(drafts[1]["support_chunk_ids"])
    first = store.query("SELECT reason FROM verdicts WHERE validator = 'closed_book' ORDER BY attempt")
    assert first[0]["reason"] == "closed_book_solved"
    assert summary.accepted == 1


def test_a_known_answer_is_remembered_and_a_later_run_draws_it_no_more(world_store):
    """The answer a model knew goes to refused_answers; a later run with the same seed, which
    would draw the same first subgraph, draws another answer (unless told not to avoid them)."""
    store, _, _ = world_store
    _run(world_store, Plan(knows_first_answer=True), n=1, max_attempts=1)
    refused = store.query("SELECT * FROM refused_answers")
    assert len(refused) == 1 and refused[0]["reason"] == "closed_book_solved" and refused[0]["lang"] == "en"
    key = refused[0]["entity_key"]
    assert refused[0]["name"] and refused[0]["cell"] and refused[0]["run_id"] == "r1"
    first = store.query("SELECT origin FROM drafts WHERE draft_id = ?", [refused[0]["draft_id"]])
    assert [d["origin"] for d in first] == ["compose"]  # the first subgraph's answer, not the reselected one

    def answers(run_id: str, settings=None) -> list[str]:
        store_, index, taxonomy = world_store
        run_generation(store_, index, World(Plan()).llm(), settings or world_settings(), n=1, lang="en",
                       run_id=run_id, seed=7, taxonomy=taxonomy, max_attempts=1)
        rows = store.query("SELECT subgraph FROM candidates WHERE run_id = ? AND status <> 'started'", [run_id])
        return [json.loads(r["subgraph"])["answer_entity"] for r in rows]

    assert key not in answers("r2")
    settings = world_settings()
    settings.compose = settings.compose.model_copy(update={"avoid_refused_answers": False})
    assert answers("r3", settings) == [key]

    # the user lets it back in: `factory refused --forget KEY`; the listing keeps its history
    from typer.testing import CliRunner

    from factory.cli import app

    root = str(store.root)
    listed = CliRunner().invoke(app, ["refused", "--store", root, "--lang", "en", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output)["entity_key"] == key
    forgot = CliRunner().invoke(app, ["refused", "--store", root, "--lang", "en", "--forget", key, "--note", "why"])
    assert forgot.exit_code == 0 and "1 of 1" in forgot.output
    assert CliRunner().invoke(app, ["refused", "--store", root, "--lang", "en", "--json"]).output.strip() == ""
    history = json.loads(CliRunner().invoke(app, ["refused", "--store", root, "--lang", "en", "--all", "--json"]).output)
    assert (history["latest"], history["refusals"], history["note"]) == ("forgotten", 1, "why")
    assert answers("r4") == [key]


def test_a_declined_subgraph_is_recorded_and_reselected(world_store):
    """A composer that finds no honest question on its passages says so instead of forcing one:
    the decline is a recorded verdict with its reason, and the loop draws another subgraph."""
    store, _, _ = world_store
    summary, world = _run(world_store, Plan(declines_first=True), n=1, max_attempts=1)
    drafts = store.query("SELECT origin, question, declined, support_chunk_ids FROM drafts ORDER BY attempt")
    assert [d["origin"] for d in drafts] == ["compose", "reselect"] and summary.revisions == 0
    assert drafts[0]["question"] == "" and "coincidence" in drafts[0]["declined"] and not drafts[1]["declined"]
    first, second = (set(d["support_chunk_ids"]) for d in drafts)
    assert len(first & second) < 0.5 * len(second)  # not mostly the subgraph it declined
    verdict = store.query("SELECT validator, reason, feedback FROM verdicts ORDER BY attempt, step")[0]
    assert (verdict["validator"], verdict["reason"]) == ("schema", "no_honest_question")
    assert "coincidence" in verdict["feedback"]
    assert summary.accepted == 1 and world.declined


def test_a_decline_with_no_reselection_left_ends_the_candidate_with_its_reason(world_store):
    store, _, _ = world_store
    settings = world_settings()
    settings.generate = settings.generate.model_copy(update={"max_reselections": 0})
    index, taxonomy = world_store[1], world_store[2]
    summary = run_generation(store, index, World(Plan(declines_first=True)).llm(), settings, n=1, lang="en",
                             run_id="r1", seed=7, taxonomy=taxonomy, max_attempts=1)
    assert summary.accepted == 0 and summary.rejected_by == {"schema": 1}
    row = store.query("SELECT validator, reason, feedback, revisions FROM rejected_tasks")[0]
    assert (row["validator"], row["reason"], row["revisions"]) == ("schema", "no_honest_question", 0)
    assert "coincidence" in row["feedback"]


def test_near_duplicate_questions_are_rejected(world_store):
    store, _, _ = world_store
    summary, _ = _run(world_store, Plan(compose="same", revise="clean"), n=2, max_attempts=3)
    assert summary.accepted == 1
    dups = store.query("SELECT * FROM rejected_tasks WHERE validator = 'dedup'")
    # the same question again: on another support it is a near duplicate; a draw of the same
    # support (the world is small) is caught first as that. One of the three cells drawn
    # (chain/descriptive/work) has no answer here: the world's one work has an article of its own
    reasons = [d["reason"] for d in dups]
    assert len(dups) >= 1 and "near_duplicate_question" in reasons, reasons
    assert summary.rejected_by == {"dedup": len(dups), "select": 3 - 1 - len(dups)}, summary.rejected_by
    assert set(reasons) <= {"near_duplicate_question", "same_support"}, reasons
    assert store.scalar("SELECT count(*) FROM tasks") == 1


def test_selection_failure_is_a_recorded_rejection(world_store, tmp_path):
    store, index, taxonomy = world_store
    s = world_settings()
    # no entity of this small corpus is in 40 documents: no bridge qualifies, every selection fails
    s.compose.bridge_min_df, s.compose.bridge_max_df = 40, 50
    s.compose.select_tries = 3
    summary = run_generation(store, index, World().llm(), s, n=1, lang="en", run_id="sel", seed=1,
                             max_attempts=2, taxonomy=taxonomy)
    assert summary.accepted == 0 and summary.rejected == 2
    rows = store.query("SELECT stage, reason, feedback FROM rejected_tasks")
    assert {r["stage"] for r in rows} == {"select"} and all(r["feedback"] for r in rows)


def test_resume_after_crash_repeats_no_recorded_call_and_doubles_no_task(world_store):
    store, index, taxonomy = world_store
    first = World(Plan(crash_after_calls=40))
    with pytest.raises(Crash):
        run_generation(store, index, Gateway(first.llm(), store, run_id="r"), world_settings(), n=4, lang="en",
                       run_id="r", seed=3, taxonomy=taxonomy)
    done_before = store.query("SELECT candidate_id, status FROM candidates WHERE run_id = 'r'")
    accepted_before = {r["task_id"] for r in store.query("SELECT task_id FROM tasks")}
    assert accepted_before and any(r["status"] == "started" for r in done_before)  # cut short mid-candidate
    recorded = {r["request_key"] for r in store.query("SELECT request_key FROM llm_calls WHERE ok")}

    second = World(Plan())
    llm = second.llm()
    summary = run_generation(store, index, Gateway(llm, store, run_id="r"), world_settings(), n=4, lang="en",
                             run_id="r", seed=3, taxonomy=taxonomy)
    assert summary.earlier_accepted == len(accepted_before)
    assert summary.earlier_accepted + summary.accepted == 4
    asked_again = [r for r in llm.requests if r.key(llm.model) in recorded]
    assert asked_again == []
    tasks = store.query("SELECT task_id FROM tasks")
    assert len(tasks) == len({t["task_id"] for t in tasks}) == 4
    assert accepted_before <= {t["task_id"] for t in tasks}
    # every candidate ended in exactly one final state
    states = store.query("SELECT status FROM candidates WHERE run_id = 'r'")
    assert all(s["status"] in {"accepted", "rejected"} for s in states)


def test_finished_candidate_is_not_redone(world_store):
    store, index, taxonomy = world_store
    world = World()
    ctx = make_context(store, index, world.llm(), world_settings(), lang="en", run_id="once", seed=5, taxonomy=taxonomy)
    job = Job(index=0, cell=CellSampler(taxonomy, 5, "en").draw(0).key)
    first = run_candidate(job, ctx)
    assert first.status in {"passed", "rejected"}
    if first.status == "passed":  # only the driver settles: write its 'accepted' row as it would
        ctx.writer.append("candidates", [first.settled(status="accepted").row()])
        ctx.writer.flush()
    calls = world.calls
    ctx.close()
    # the next try of the run (a resume) builds its context from the store: the candidate is finished
    ctx = make_context(store, index, world.llm(), world_settings(), lang="en", run_id="once", seed=5, taxonomy=taxonomy)
    again = run_candidate(job, ctx)
    assert world.calls == calls and again.resumed and again.status in {"accepted", "rejected"}
    ctx.close()


def test_rejects_are_readable_from_another_process_while_running(world_store):
    import subprocess
    import sys

    store, _, _ = world_store
    seen: list[int] = []

    def peek(outcome, summary):
        if outcome.status == "rejected" and not seen:
            code = ("import sys; from factory.store import Store; "
                    "print(Store(sys.argv[1]).scalar('SELECT count(*) FROM rejected_tasks'))")
            out = subprocess.run([sys.executable, "-c", code, str(store.root)], capture_output=True, text=True,
                                 check=True)
            seen.append(int(out.stdout.strip()))

    _run(world_store, Plan(compose="leak", revise="leak"), n=1, max_attempts=2, progress=peek)
    assert seen and seen[0] >= 1


def test_many_candidates_in_flight(world_store):
    store, index, taxonomy = world_store
    # no revisions: the fake's reader tells identical questions apart only by their passages, and two
    # candidates may draw the same passages for different cells; a revision would change the question
    settings = world_settings().model_copy(deep=True)
    settings.generate.max_revisions = 0
    summary = run_generation(store, index, World(Plan(compose="same", revise="same")).llm(), settings, n=3,
                             lang="en", run_id="r1", seed=7, taxonomy=taxonomy, max_attempts=6, concurrency=3)
    # one question for every candidate: exactly one may be accepted, however many run at once
    assert summary.accepted == 1 and summary.candidates == 6
    assert store.scalar("SELECT count(*) FROM tasks") == 1
    finals = store.query("SELECT candidate_id, status FROM candidates WHERE status <> 'started'")
    assert len(finals) == len({f["candidate_id"] for f in finals}) == 6


# ----------------------------------------------------------------------------- command line
def _cli(*args):
    from typer.testing import CliRunner

    from factory.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_generate_funnel_rejected(built, tmp_path):
    import json

    shutil.copytree(built / "store", tmp_path / "store")
    store = tmp_path / "store"
    output = _cli("generate", "--store", store, "--index", built / "index", "--llm", "fake", "--n", "1",
                  "--max-attempts", "2", "--seed", "4", "--json")
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["candidates"] == 2 and summary["run_id"] == "gen-en-s4"
    # the `fake` spec writes schema placeholders ('fake question' / 'fake answer'): honestly rejected
    assert summary["accepted"] == 0 and sum(summary["rejected_by"].values()) == 2
    again = json.loads(_cli("generate", "--store", store, "--index", built / "index", "--llm", "fake", "--n", "1",
                            "--max-attempts", "2", "--seed", "4", "--json").strip().splitlines()[-1])
    assert again["candidates"] == 0 and again["stopped_by"] == "max_attempts"  # resumed: nothing left to do

    funnel = _cli("funnel", "--store", store)
    assert "validator funnel" in funnel and "schema" in funnel and "acceptance 0.0%" in funnel
    data = json.loads(_cli("funnel", "--store", store, "--json"))
    assert data["candidates"] == 2 and data["validators"][0]["validator"] == "schema"

    rejected = _cli("rejected", "--store", store, "--limit", "5")
    assert "feedback:" in rejected and "gen-en-s4-s4-00000" in rejected
    first = json.loads(_cli("rejected", "--store", store, "--json", "--limit", "1").strip().splitlines()[0])
    only = _cli("rejected", "--store", store, "--validator", first["validator"] or first["stage"])
    assert first["candidate_id"] in only
    assert "no rejected candidates" in _cli("rejected", "--store", store, "--validator", "nonesuch")
    trail = _cli("rejected", "--store", store, "--limit", "1", "--trail")
    assert "[0] compose:" in trail


@pytest.fixture(scope="session")
def built_ru(tmp_path_factory):
    from factory.index.fixed import build_index
    from factory.ingest import ingest

    root = tmp_path_factory.mktemp("generate-ru")
    store = Store(root / "store")
    ingest(FIXTURE.with_name("corpus_ru.jsonl"), store, "ru", Settings())
    build_index(store, root / "index", "ru", dense=None, progress=False)
    chain_only_taxonomy(ROOT / "taxonomy", root / "taxonomy")
    return root


def test_russian_path_end_to_end(built_ru, tmp_path):
    """Russian: a leaked answer (caught by lemma-level leakage), revised, then every validator passes."""
    from factory.index.fixed import open_index

    shutil.copytree(built_ru / "store", tmp_path / "store")
    store = Store(tmp_path / "store")
    world = World(Plan(compose="leak", revise="clean"), lang="ru")
    summary = run_generation(store, open_index(built_ru / "index", store=store), world.llm(), world_settings(), n=1,
                             lang="ru", run_id="ru", seed=2, max_attempts=3, taxonomy=load_taxonomy(built_ru / "taxonomy"))
    assert summary.accepted == 1, store.query("SELECT * FROM rejected_tasks")
    task = store.query("SELECT * FROM tasks")[0]
    assert task["lang"] == "ru" and task["revisions"] >= 1
    first = store.query("SELECT failed_validator, failed_reason FROM attempts WHERE origin = 'compose' "
                        "AND candidate_id = ?", [task["candidate_id"]])[0]
    assert first == {"failed_validator": "leakage", "failed_reason": "answer_leaked"}


def test_token_budget_stops_new_candidates(world_store):
    summary, _ = _run(world_store, Plan(compose="leak", revise="leak"), n=5, max_attempts=10, token_budget=1)
    assert summary.candidates == 1 and summary.tokens > 0 and summary.stopped_by == "token_budget"
