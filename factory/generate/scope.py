"""A run's scope and ids: which accepted tasks it counts, and training sets that grow run after run.

A benchmark build counts its own run only: coverage and duplicates are per run. A
*training set* is a name that many runs of ``generate_training_data`` append to (a
scheduled deployment, for days, maybe two runs at once): each run records itself in
``runs`` with command ``generate-training-data`` and its settings (``training_data.name``),
and the set's tasks are the tasks of those runs in that language. Every run then

* draws cells by the coverage of the whole set so far (the sampler's accepted counts),
* rejects a task that duplicates one anywhere in the set (same support chunks, or a
  near-duplicate question), checked under a file lock together with writing the task,
  so two runs settling at the same moment cannot both accept a pair of duplicates,
* has its own run id (no collision between scheduled runs) and its own random streams
  (``stream_seed``), so it never replays the candidates of an earlier run.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from factory.clock import utc_stamp
from factory.files import file_lock

TRAINING_COMMAND = "generate-training-data"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:40] or "set"


def training_run_id(name: str, unique: str | None = None) -> str:
    """A new run id: the set, the UTC time and something unique (the Prefect flow run id)."""
    stamp = utc_stamp()
    tail = re.sub(r"[^a-z0-9]", "", (unique or uuid.uuid4().hex).lower())[:8]
    return f"train-{slug(name)}-{stamp}-{tail}"


def stream_seed(seed: int, run_id: str) -> int:
    """The seed of a run's random streams: the user's seed and the run id, hashed (48 bits).

    Candidate ``i`` draws from ``(stream_seed, i)``, so two runs never share a stream
    unless they share the run id (a rerun of a crashed run, which should continue it).
    """
    return int.from_bytes(hashlib.sha256(f"{seed}:{run_id}".encode()).digest()[:6], "big")


@dataclass(frozen=True)
class TaskScope:
    """The accepted tasks that count for a run: its own, or its training set's."""

    run_id: str
    lang: str
    training_set: str | None = None

    def _runs(self) -> tuple[str, list[Any]]:
        if self.training_set is None:
            return "run_id = ?", [self.run_id]
        return (
            "run_id IN (SELECT run_id FROM runs WHERE command = ? "
            "AND json_extract_string(settings, '$.training_data.name') = ?)",
            [TRAINING_COMMAND, self.training_set],
        )

    def accepted(self, store: Any, *, before: datetime | None = None,
                 since: datetime | None = None) -> list[dict[str, Any]]:
        """Accepted tasks in scope (written before / since a time, if given), oldest first."""
        where, params = self._runs()
        sql = (f"SELECT task_id, run_id, cell, question, answer, support_chunk_ids, _written_at FROM tasks "
               f"WHERE {where} AND lang = ?")
        params = [*params, self.lang]
        if before is not None:
            sql += " AND _written_at < ?"
            params.append(before)
        if since is not None:
            sql += " AND _written_at >= ?"
            params.append(since)
        return store.query(sql + " ORDER BY _written_at, task_id", params)

    def _others(self, others: bool) -> tuple[str, list[Any]]:
        where, params = self._runs()
        if others:  # the scope's runs but this one
            return f"{where} AND run_id <> ?", [*params, self.run_id]
        return where, params

    def drawn(self, store: Any, *, others: bool = False) -> dict[str, int]:
        """Cells drawn so far in scope (a candidate cut short counts: it keeps its cell)."""
        where, params = self._others(others)
        rows = store.query(f"SELECT cell, count(*) AS n FROM candidates WHERE {where} AND lang = ? "
                           "AND cell IS NOT NULL GROUP BY cell", [*params, self.lang])
        return {r["cell"]: int(r["n"]) for r in rows}

    def unsupported(self, store: Any, *, others: bool = False) -> dict[str, str]:
        """Cells found structurally unsupported by the corpus in scope."""
        where, params = self._others(others)
        rows = store.query(f"SELECT DISTINCT cell, feedback FROM candidates WHERE {where} AND lang = ? "
                           "AND stage = 'select' AND reason = 'unsupported_cell' ORDER BY cell", [*params, self.lang])
        return {r["cell"]: r["feedback"] or "" for r in rows}

    @contextlib.contextmanager
    def settling(self, store: Any) -> Iterator[None]:
        """Held while a run checks a task for duplicates and writes it (a set's runs share it)."""
        if self.training_set is None:
            yield  # one driver per run: nobody else settles this run's tasks
            return
        digest = hashlib.sha256(f"{self.training_set}\n{self.lang}".encode()).hexdigest()[:16]
        with file_lock(Path(store.root) / "locks" / f"training-set-{digest}.lock"):
            yield


def training_set_summary(store: Any, name: str, lang: str) -> dict[str, Any]:
    """Size of a training set, per run and per cell, and whether any task appears twice."""
    scope = TaskScope(run_id="", lang=lang, training_set=name)
    where, params = scope._runs()
    params = [*params, lang]
    runs = store.query(f"SELECT run_id, count(*) AS tasks FROM tasks WHERE {where} AND lang = ? "
                       "GROUP BY run_id ORDER BY min(_written_at)", params)
    cells = store.query(f"SELECT cell, count(*) AS n FROM tasks WHERE {where} AND lang = ? GROUP BY cell ORDER BY cell",
                        params)
    same_support = store.scalar(
        f"SELECT count(*) FROM (SELECT list_sort(support_chunk_ids) AS s FROM tasks WHERE {where} AND lang = ? "
        "GROUP BY s HAVING count(*) > 1)", params)
    same_question = store.scalar(
        f"SELECT count(*) FROM (SELECT question FROM tasks WHERE {where} AND lang = ? GROUP BY question "
        "HAVING count(*) > 1)", params)
    return {
        "training_set": name, "lang": lang, "tasks": sum(int(r["tasks"]) for r in runs),
        "runs": {r["run_id"]: int(r["tasks"]) for r in runs}, "cells": {r["cell"]: int(r["n"]) for r in cells},
        "duplicate_support_sets": int(same_support or 0), "duplicate_questions": int(same_question or 0),
    }
