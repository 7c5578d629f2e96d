"""The tasks training data is made from, and the benchmark tasks it must stay away from.

Accepted tasks come from the store's ``tasks`` view. Benchmark tasks come from three
places, all kept in ``benchmark_tasks`` once seen so a later export excludes them even
when the folder is not named again: the ``tasks.jsonl`` of benchmark folders given on
the command line, and (``training.exclude_build_runs``) the tasks of every
``build-benchmark`` run recorded in the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field

from factory.benchmark_folder import TASKS, BenchmarkFolderError, read_jsonl
from factory.errors import FactoryError
from factory.store import json_value


class TrainingError(FactoryError):
    pass


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainingTask(_Model):
    """An accepted task as training needs it."""

    task_id: str
    lang: str
    question: str
    answer: str = ""
    answer_aliases: list[str] = Field(default_factory=list)
    support_chunk_ids: list[str]
    answer_chunk_id: str | None = None
    mechanic: str = ""
    cell: str = ""
    difficulty: dict[str, Any] = Field(default_factory=dict)
    run_id: str = ""


class BenchmarkTask(_Model):
    benchmark: str
    task_id: str
    lang: str
    question: str
    support_chunk_ids: list[str] = Field(default_factory=list)
    source: str = "folder"  # folder | build_run


def load_tasks(store: Any, langs: Iterable[str] | None = None) -> list[TrainingTask]:
    """Every accepted task in the store (one row per task id), ordered by id."""
    rows = store.query(
        "SELECT task_id, lang, question, answer, answer_aliases, support_chunk_ids, answer_chunk_id, mechanic, cell, "
        "difficulty, run_id FROM tasks ORDER BY task_id"
    )
    wanted = set(langs) if langs else None
    tasks = []
    for row in rows:
        if wanted is not None and row["lang"] not in wanted:
            continue
        difficulty = json_value(row.get("difficulty"))
        tasks.append(TrainingTask(
            task_id=row["task_id"],
            lang=row.get("lang") or "en",
            question=row.get("question") or "",
            answer=row.get("answer") or "",
            answer_aliases=list(row.get("answer_aliases") or []),
            support_chunk_ids=list(row.get("support_chunk_ids") or []),
            answer_chunk_id=row.get("answer_chunk_id"),
            mechanic=row.get("mechanic") or (row.get("cell") or "").split("/")[0],
            cell=row.get("cell") or "",
            difficulty=difficulty if isinstance(difficulty, dict) else {},
            run_id=row.get("run_id") or "",
        ))
    return tasks


# ------------------------------------------------------------------ benchmarks
def read_benchmark_folder(folder: str | Path) -> list[BenchmarkTask]:
    """The tasks of an exported benchmark folder (its ``tasks.jsonl``)."""
    folder = Path(folder)
    path = folder / TASKS
    if not path.is_file():
        raise TrainingError(f"{folder}: no tasks.jsonl; --exclude-benchmark wants a benchmark folder")
    name = str(folder.resolve())
    tasks = []
    try:
        for line_no, row in read_jsonl(path):
            if not row.get("task_id") or not isinstance(row.get("question"), str):
                raise TrainingError(f"{path}:{line_no}: a task needs task_id and question")
            support = row.get("support_chunk_ids") or []
            if not isinstance(support, list):
                raise TrainingError(f"{path}:{line_no}: support_chunk_ids must be a list")
            tasks.append(BenchmarkTask(
                benchmark=name, task_id=str(row["task_id"]), lang=str(row.get("lang") or ""),
                question=row["question"], support_chunk_ids=[str(c) for c in support], source="folder",
            ))
    except BenchmarkFolderError as exc:
        raise TrainingError(str(exc)) from exc
    return tasks


def build_run_tasks(store: Any) -> list[BenchmarkTask]:
    """Tasks accepted by build-benchmark runs: those runs end in a benchmark folder."""
    rows = store.query(
        "SELECT task_id, lang, question, support_chunk_ids, run_id FROM tasks "
        "WHERE run_id IN (SELECT run_id FROM runs WHERE command = 'build-benchmark') ORDER BY task_id"
    )
    return [
        BenchmarkTask(benchmark=r["run_id"], task_id=r["task_id"], lang=r.get("lang") or "",
                      question=r.get("question") or "", support_chunk_ids=list(r.get("support_chunk_ids") or []),
                      source="build_run")
        for r in rows
    ]


def stored_benchmark_tasks(store: Any) -> list[BenchmarkTask]:
    rows = store.query(
        "SELECT benchmark, task_id, lang, question, support_chunk_ids, source FROM benchmark_tasks "
        "ORDER BY benchmark, task_id"
    )
    return [
        BenchmarkTask(benchmark=r["benchmark"], task_id=r["task_id"], lang=r.get("lang") or "",
                      question=r.get("question") or "", support_chunk_ids=list(r.get("support_chunk_ids") or []),
                      source=r.get("source") or "folder")
        for r in rows
    ]


def gather_benchmark_tasks(
    store: Any, folders: Iterable[str | Path] = (), *, include_build_runs: bool = True
) -> list[BenchmarkTask]:
    """Benchmark tasks from the folders, the build runs and earlier exports; new ones are recorded."""
    known = {(t.benchmark, t.task_id) for t in stored_benchmark_tasks(store)}
    found: list[BenchmarkTask] = []
    for folder in folders:
        found.extend(read_benchmark_folder(folder))
    if include_build_runs:
        found.extend(build_run_tasks(store))
    new = [t for t in found if (t.benchmark, t.task_id) not in known]
    if new:
        store.append("benchmark_tasks", [t.model_dump() for t in new], name="training-benchmarks")
    return stored_benchmark_tasks(store) if new or known else []
