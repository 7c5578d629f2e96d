"""Training runs without Prefect: a set that grows run after run, streams, coverage, concurrent runs.

These test the orchestration around the gauntlet, not its strength: with ``fake:factory`` on
the 20-article fixture corpus the broad-query check rejects most drafts at k=10 (a top 10
is half the corpus), so it runs at k=1 here (``relaxed_shortcut``) and runs accept enough
tasks to show growth and duplicates in seconds.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from factory.store import Store
from factory.generate import TaskScope, stream_seed, training_run_id

from training_helpers import (CORPUS_EN, assert_no_duplicates, assert_rows_complete, copy_store, prepare_store,
                              relaxed_shortcut, run_training, set_tasks)

pytestmark = pytest.mark.usefixtures("relaxed_shortcut")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_store(tmp_path_factory.mktemp("training_runs") / "store")


def _draws(store: Path, run_id: str) -> list[tuple]:
    rows = Store(store).query("SELECT idx, cell, subgraph FROM candidates WHERE run_id = ? ORDER BY idx", [run_id])
    return [(r["idx"], r["cell"], r["subgraph"]) for r in rows]


def test_run_ids_and_streams_differ_per_run() -> None:
    ids = {training_run_id("nightly") for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("train-nightly-") for i in ids)
    assert training_run_id("a b/c", "0f3c8a9e-1111-2222-3333-444455556666").endswith("-0f3c8a9e")
    assert len({stream_seed(13, i) for i in ids}) == 50
    assert stream_seed(13, "train-x") == stream_seed(13, "train-x") != stream_seed(14, "train-x")


def test_runs_grow_one_training_set_without_duplicates(prepared: Path, tmp_path: Path) -> None:
    from factory.generate import Settler
    from factory.settings import load_settings

    store = copy_store(prepared, tmp_path / "store")
    # fixed run ids give fixed random streams, so the outcome is the same on every test run;
    # runs go on until two of them added tasks (the first two do, as measured)
    reports, total, contributed = [], 0, 0
    for number in range(1, 5):
        report, run = run_training(store, training_set="set-a", run_id=f"train-set-a-{number}", max_attempts=8)
        reports.append((report, run))
        total += report.accepted
        contributed += report.accepted > 0
        tasks = set_tasks(store, "set-a")
        assert len(tasks) == total  # the set grows by exactly what each run accepted
        assert_no_duplicates(tasks)
        assert_rows_complete(store, run.run_id, report.started)
        if contributed == 2:
            break
    assert contributed == 2, [r.accepted for r, _ in reports]
    runs = [run for _, run in reports]
    assert len({run.run_id for run in runs}) == len({run.seed for run in runs}) == len(runs)
    # no run replayed an earlier one's candidates (each has its own random streams)
    draws = [[d[1:] for d in _draws(store, run.run_id)] for run in runs]
    assert all(draws[i] != draws[j] for i in range(len(draws)) for j in range(i))

    # coverage is carried over: a further run's sampler starts from the whole set's accepted counts
    db = Store(store)
    settings = load_settings(**{"build.dense": "none"})
    driver = Settler(db, settings, lang="en", run_id="train-next", seed=1,
                       scope=TaskScope(run_id="train-next", lang="en", training_set="set-a"))
    counted = {cell: n for cell, n in driver.sampler.accepted.items() if n}
    assert counted == dict(Counter(t["cell"] for t in set_tasks(store, "set-a")))
    assert sum(driver.sampler.drawn.values()) == sum(report.started for report, _ in reports)
    driver.close()
    other = Settler(db, settings, lang="en", run_id="train-other", seed=1,
                      scope=TaskScope(run_id="train-other", lang="en", training_set="set-b"))
    assert sum(other.sampler.accepted.values()) == 0  # another set in the same store starts from nothing
    other.close()


def test_rerunning_a_run_id_continues_it(prepared: Path, tmp_path: Path) -> None:
    store = copy_store(prepared, tmp_path / "store")
    first, run = run_training(store, training_set="set-r", run_id="train-set-r-fixed", max_attempts=5)
    again, rerun = run_training(store, training_set="set-r", run_id="train-set-r-fixed", max_attempts=5)
    assert rerun.seed == run.seed
    assert again.started == 0 and again.resumed_done == 5 and again.accepted_total == first.accepted
    assert len(set_tasks(store, "set-r")) == first.accepted


def test_concurrent_runs_composing_the_same_tasks_accept_each_once(prepared: Path, tmp_path: Path) -> None:
    """Two runs at once with the same random streams compose identical candidates; settling under
    the set's lock accepts each task once and rejects the other run's copy as a duplicate."""
    store = copy_store(prepared, tmp_path / "store")
    reports: dict[str, object] = {}
    errors: list[BaseException] = []

    def one(name: str) -> None:
        try:
            reports[name] = run_training(store, training_set="set-c", run_id=name, stream=424242, max_attempts=8)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(f"train-set-c-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    tasks = set_tasks(store, "set-c")
    assert_no_duplicates(tasks)
    accepted = sum(report.accepted for report, _ in reports.values())
    assert len(tasks) == accepted >= 1
    for name, (report, _) in reports.items():
        assert_rows_complete(store, name, report.started)
    dedup = Store(store).query(
        "SELECT run_id, reason, feedback FROM candidates WHERE stage = 'dedup' AND run_id LIKE 'train-set-c-%'")
    # the runs composed the same passing tasks: the copy settled second was rejected, naming the other run's task
    of_other_run = [row for row in dedup if row["reason"] == "same_support"
                    and not row["feedback"].split("accepted task ")[1].startswith(row["run_id"] + "-")]
    assert of_other_run, dedup


@pytest.mark.slow
def test_the_flow_appends_one_run_and_exports_the_training_data(prefect_api: str, prepared: Path,
                                                                tmp_path: Path) -> None:
    """The Prefect flow itself (in process, on the test server): one run, then the export step."""
    import json

    from flows.generate_training_data import generate_training_data

    store = copy_store(prepared, tmp_path / "store")
    result = generate_training_data(corpus=str(CORPUS_EN), lang="en", store=str(store), llm_spec="fake:factory",
                                    training_set="flow", max_attempts=6, concurrency=2, seed=3, run_id="train-flow-1",
                                    export_out=str(tmp_path / "export"))
    assert result["run_id"] == "train-flow-1" and result["stopped_by"] == "max_attempts"
    assert result["tasks_before"] == 0 and result["tasks_after"] == result["accepted"] >= 1
    assert result["duplicate_support_sets"] == result["duplicate_questions"] == 0
    assert_rows_complete(store, "train-flow-1", 6)
    runs = Store(store).query("SELECT command, json_extract_string(settings, '$.training_data.name') AS name "
                              "FROM runs WHERE run_id = 'train-flow-1'")
    assert runs == [{"command": "generate-training-data", "name": "flow"}]
    summary = json.loads((tmp_path / "export" / "summary.json").read_text())
    exported = set(summary["pools"]["en"]["sft"]) | set(summary["pools"]["en"]["rl"])
    assert exported == {t["task_id"] for t in set_tasks(store, "flow")}  # the set's tasks, each in one pool
    assert result["export"]["pools"]["en"]["sft"] + result["export"]["pools"]["en"]["rl"] == len(exported)


def _over_two_servers(store: Path, *, stop_second_after: int | None) -> tuple[object, tuple[int, int]]:
    """A run with the factory's fake behind two local HTTP servers, balanced; the second one
    stopped once it has answered ``stop_second_after`` requests (never, if None)."""
    from factory.llm.fake_factory import factory_fake
    from factory.llm.fake_server import FakeOpenAIServer, llm_answer

    answer = llm_answer(factory_fake())  # one fake behind both: it remembers what it composed
    with FakeOpenAIServer(answer=answer, model="fake-factory") as one, \
            FakeOpenAIServer(answer=answer, model="fake-factory") as two:
        done = threading.Event()

        def stop_second() -> None:
            while stop_second_after is not None and len(two.log) < stop_second_after and not done.is_set():
                time.sleep(0.01)
            if stop_second_after is not None:
                two.stop()

        stopper = threading.Thread(target=stop_second, daemon=True)
        stopper.start()
        spec = f"openai:{one.url},{two.url}#fake-factory?timeout=5&retries=3&cooldown=30"
        report, _ = run_training(store, training_set="lb", run_id="train-lb-1", max_attempts=8, llm=spec)
        done.set()
        stopper.join(timeout=5)
        return report, (len(one.log), len(two.log))


def test_a_run_over_two_llm_servers_survives_one_going_down(prepared: Path, tmp_path: Path) -> None:
    """Two balanced servers, the second stopped mid-run: the run settles every candidate, no LLM
    call ends in an error, and it accepts the same tasks as with both servers up."""
    both_up, served_both = _over_two_servers(copy_store(prepared, tmp_path / "both"), stop_second_after=None)
    store = copy_store(prepared, tmp_path / "one_down")
    one_down, served = _over_two_servers(store, stop_second_after=15)
    assert min(served_both) > 0.3 * max(served_both)  # both up: the load was shared
    assert served[1] >= 15 and served[0] > served[1]  # the second served until it stopped, then the first alone
    db = Store(store)
    assert db.scalar("SELECT count(*) FROM llm_calls WHERE error IS NOT NULL") == 0
    assert_rows_complete(store, "train-lb-1", one_down.started)
    fields = "task_id, cell, question, answer, support_chunk_ids"
    assert db.query(f"SELECT {fields} FROM tasks ORDER BY task_id") == \
        Store(tmp_path / "both").query(f"SELECT {fields} FROM tasks ORDER BY task_id")
    assert one_down.accepted == both_up.accepted >= 1
