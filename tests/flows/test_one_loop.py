"""`factory generate` and the flows' generation step are one loop: for a seed, `factory generate`
gives the same tasks and rejections every time, and the same as the build flow's step running
its candidates on worker contexts (what the threads and Dask task runners do; the Prefect and
Dask runs themselves are in test_dask_runner.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from training_helpers import (CORPUS_EN, copy_store, factory_generate, prepare_store, relaxed_shortcut,  # noqa: F401
                              run_outcomes)

pytestmark = pytest.mark.usefixtures("relaxed_shortcut")
SEED, N, ATTEMPTS, CONCURRENCY = 5, 50, 10, 2
LOOKAHEAD = 4  # generate.lookahead's default (auto) for the fakes: it, not the concurrency, fixes the tasks


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_store(tmp_path_factory.mktemp("one_loop") / "store")


def _build_step(store: Path, out: Path, concurrency: int = CONCURRENCY) -> str:
    """The generation step of `build-benchmark --seed SEED ...`, candidates on worker contexts."""
    from factory.generate import GenerationRun, close_contexts, run_in_order, run_job, start_run
    from factory.params import BuildParams
    from flows.build_benchmark import resolve_build

    plan = resolve_build(BuildParams(lang="en", corpus=str(CORPUS_EN), n=N, llm_spec="fake:factory", out=str(out),
                                     store=str(store), seed=SEED, concurrency=concurrency, max_attempts=ATTEMPTS))
    run = GenerationRun(store=str(plan.store_path), index_dir=str(plan.index_dir), settings=plan.settings,
                        lang="en", run_id=plan.run_id, seed=plan.settings.seed, limits=plan.limits)
    driver, spec, state = start_run(run)
    try:
        assert run.limits.lookahead == LOOKAHEAD and run.limits.in_flight == min(concurrency, LOOKAHEAD)
        with ThreadPoolExecutor(max_workers=run.limits.in_flight) as pool:
            run_in_order(lambda job: pool.submit(run_job, job, spec), driver, run.limits, state)
    finally:
        driver.close()
        close_contexts(run.run_id)
    return plan.run_id


def test_generate_twice_and_the_build_step_give_the_same_tasks(prepared: Path, tmp_path: Path) -> None:
    first, second, built = (copy_store(prepared, tmp_path / name) for name in ("first", "second", "built"))
    one = factory_generate(first, seed=SEED, n=N, max_attempts=ATTEMPTS, concurrency=CONCURRENCY)
    two = factory_generate(second, seed=SEED, n=N, max_attempts=ATTEMPTS, concurrency=CONCURRENCY)
    assert one["run_id"] == two["run_id"] == f"gen-en-s{SEED}" and one["stopped_by"] == "max_attempts"
    candidates, tasks = run_outcomes(first, one["run_id"])
    assert len(candidates) == ATTEMPTS and len(tasks) >= 1 and one["rejected"] >= 1
    assert run_outcomes(second, two["run_id"]) == (candidates, tasks)  # the same tasks and the same rejections
    assert run_outcomes(built, _build_step(built, tmp_path / "bench")) == (candidates, tasks)


def test_the_same_tasks_at_any_concurrency(prepared: Path, tmp_path: Path) -> None:
    """One seed and one lookahead: one candidate at a time and three in flight accept the same
    tasks and reject the same candidates (the lookahead caps the candidates in flight)."""
    serial, parallel = (copy_store(prepared, tmp_path / name) for name in ("serial", "parallel"))
    one = run_outcomes(serial, _build_step(serial, tmp_path / "bench-1", concurrency=1))
    three = run_outcomes(parallel, _build_step(parallel, tmp_path / "bench-3", concurrency=3))
    candidates, tasks = one
    assert len(candidates) == ATTEMPTS and tasks and any(c["status"] == "rejected" for c in candidates)
    assert three == one
