"""Disjoint SFT and RL pools per language, stable across reruns.

1. A task that is a benchmark task, shares a benchmark task's support set or
   near-duplicates a benchmark question is excluded from both pools.
2. The other tasks are linked when they share a support set or their questions are
   near-duplicates; linked tasks always land in the same pool, so the RL pool never
   shares a task, a support set or a near-duplicate question with the SFT pool.
3. Stored decisions stand, and spread: a new task linked to tasks of one pool joins
   it; one linked to both pools is excluded (``bridges_pools``). The remaining new
   tasks form groups (connected components), which go, in the order of a seeded hash
   of their support set, to the pool furthest below its share (``training.sft_share``)
   within the size caps; a group no pool has room for is held back (not recorded) for
   a later run.

Only new decisions are written (``training_pools``), so a scheduled deployment only
appends; the one change ever made to a stored decision is an exclusion, when a newer
benchmark comes close to a task already in a pool.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field

from factory.settings import TrainingSettings
from factory.store import json_value
from factory.task_similarity import SimilarityIndex, support_key
from factory.training.tasks import BenchmarkTask, TrainingTask

POOLS = ("sft", "rl")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PoolDecision(_Model):
    task_id: str
    lang: str
    pool: str  # sft | rl | excluded
    reason: str
    group_key: str = ""
    related_to: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    run_id: str = ""


class LangPools(_Model):
    lang: str
    sft: list[str] = Field(default_factory=list)
    rl: list[str] = Field(default_factory=list)
    excluded: dict[str, str] = Field(default_factory=dict, description="task id -> reason")
    held: list[str] = Field(default_factory=list, description="no pool had room (size caps): decided by a later run")
    new: int = 0
    newly_excluded: list[str] = Field(default_factory=list, description="moved from a pool to excluded by this run")


class PoolReport(_Model):
    langs: dict[str, LangPools] = Field(default_factory=dict)
    written: int = 0

    def pool_of(self, task_id: str) -> str | None:
        for pools in self.langs.values():
            if task_id in pools.sft:
                return "sft"
            if task_id in pools.rl:
                return "rl"
            if task_id in pools.excluded:
                return "excluded"
        return None


def stored_pools(store: Any) -> dict[str, PoolDecision]:
    rows = store.query(
        "SELECT task_id, lang, pool, reason, group_key, related_to, detail, run_id FROM training_pools ORDER BY task_id"
    )
    return {
        r["task_id"]: PoolDecision(
            task_id=r["task_id"], lang=r.get("lang") or "", pool=r["pool"], reason=r.get("reason") or "",
            group_key=r.get("group_key") or "", related_to=r.get("related_to"), detail=json_value(r.get("detail")) or {},
            run_id=r.get("run_id") or "",
        )
        for r in rows
    }


def group_hash(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by the seed and the group's key."""
    digest = hashlib.sha256(f"{seed}\x1e{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class _Components:
    """Union-find over task ids."""

    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {i: i for i in items}

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for item in self.parent:
            out[self.find(item)].append(item)
        return [sorted(members) for _, members in sorted(out.items())]


def _benchmark_exclusions(
    tasks: list[TrainingTask], benchmarks: list[BenchmarkTask], lang: str, s: TrainingSettings
) -> dict[str, PoolDecision]:
    relevant = [b for b in benchmarks if b.lang in ("", lang)]
    index = SimilarityIndex(lang, s.dup_jaccard, s.dup_perm)
    ids: dict[str, BenchmarkTask] = {}
    for b in relevant:
        key = f"{b.benchmark}#{b.task_id}"
        ids.setdefault(b.task_id, b)
        index.add(key, b.question, b.support_chunk_ids)
    out = {}
    for task in tasks:
        if task.task_id in ids:
            b = ids[task.task_id]
            out[task.task_id] = PoolDecision(task_id=task.task_id, lang=lang, pool="excluded", reason="benchmark_task",
                                             related_to=f"{b.benchmark}#{b.task_id}")
            continue
        found = index.matches(task.question, task.support_chunk_ids)
        if found:
            m = found[0]
            reason = "benchmark_same_support" if m.kind == "same_support" else "benchmark_near_duplicate"
            out[task.task_id] = PoolDecision(task_id=task.task_id, lang=lang, pool="excluded", reason=reason,
                                             related_to=m.key, detail={"jaccard": m.jaccard})
    return out


def _lang_pools(
    tasks: list[TrainingTask], benchmarks: list[BenchmarkTask], stored: dict[str, PoolDecision], lang: str,
    s: TrainingSettings, seed: int, run_id: str,
) -> tuple[LangPools, list[PoolDecision]]:
    report = LangPools(lang=lang)
    decisions: list[PoolDecision] = []
    final: dict[str, PoolDecision] = {}

    # 1. benchmark tasks and their near-duplicates are out, whatever was decided before
    for task_id, decision in _benchmark_exclusions(tasks, benchmarks, lang, s).items():
        before = stored.get(task_id)
        if before is not None and before.pool == "excluded":
            final[task_id] = before
            continue
        decision.run_id = run_id
        if before is not None:
            decision.detail["was"] = before.pool
            report.newly_excluded.append(task_id)
        decisions.append(decision)
        final[task_id] = decision
    for task in tasks:
        before = stored.get(task.task_id)
        if task.task_id not in final and before is not None and before.pool == "excluded":
            final[task.task_id] = before

    # 2. link the rest: shared support set or near-duplicate question
    live = [t for t in tasks if t.task_id not in final]
    by_id = {t.task_id: t for t in live}
    index = SimilarityIndex(lang, s.dup_jaccard, s.dup_perm)
    components = _Components(by_id)
    links: dict[str, set[str]] = defaultdict(set)
    for task in live:
        sketch = index.sketch(task.question)
        for match in index.matches(task.question, task.support_chunk_ids, skip=task.task_id, sketch=sketch):
            components.union(task.task_id, match.key)
            links[task.task_id].add(match.key)
            links[match.key].add(task.task_id)
        index.add(task.task_id, task.question, task.support_chunk_ids, sketch=sketch)

    # 3. stored pools stand and spread to new tasks linked to them; the rest form new groups
    pool_of = {t.task_id: stored[t.task_id].pool for t in live if t.task_id in stored and stored[t.task_id].pool in POOLS}
    counts = {p: sum(1 for v in pool_of.values() if v == p) for p in POOLS}
    caps = {"sft": s.sft_max, "rl": s.rl_max}

    def decide(task_id: str, pool: str, reason: str, **extra: Any) -> None:
        d = PoolDecision(task_id=task_id, lang=lang, pool=pool, reason=reason, run_id=run_id, **extra)
        decisions.append(d)
        final[task_id] = d
        pool_of[task_id] = pool
        if pool in POOLS:
            counts[pool] += 1

    fresh: list[tuple[float, str, list[str]]] = []
    for members in components.groups():
        for m in members:
            if m in pool_of:
                final[m] = stored[m]
        undecided = [m for m in members if m not in pool_of]
        if not undecided:
            continue
        # one task at a time (in id order), each seeing every decision made before it: a task
        # linked to one pool joins it, one linked to both is excluded, so no link ever joins SFT to RL
        changed = len(undecided) < len(members)
        while changed:
            changed = False
            for m in list(undecided):
                near = sorted(n for n in links[m] if pool_of.get(n) in POOLS)
                pools = {pool_of[n] for n in near}
                if len(pools) == 1:
                    anchor = near[0]
                    group = final[anchor].group_key if anchor in final else ""
                    decide(m, pools.pop(), "group", group_key=group, related_to=anchor)
                elif len(pools) == 2:
                    decide(m, "excluded", "bridges_pools", related_to=",".join(near[:4]))
                else:
                    continue
                undecided.remove(m)
                changed = True
        if not undecided:
            continue
        rest = _Components(undecided)
        for m in undecided:
            for n in links[m]:
                if n in rest.parent:
                    rest.union(m, n)
        for group in rest.groups():
            key = min(support_key(by_id[m].support_chunk_ids) or m for m in group)
            fresh.append((group_hash(seed, key), key, group))
    for u, key, members in sorted(fresh):
        k = len(members)
        total = counts["sft"] + counts["rl"] + k
        want = {"sft": s.sft_share * total - counts["sft"], "rl": (1 - s.sft_share) * total - counts["rl"]}
        if want["sft"] != want["rl"]:
            order = sorted(POOLS, key=lambda p: -want[p])
        else:
            order = ["sft", "rl"] if u < s.sft_share else ["rl", "sft"]
        order = [p for p in order if not (p == "sft" and s.sft_share == 0) and not (p == "rl" and s.sft_share == 1)]
        room = [p for p in order if caps[p] is None or counts[p] + k <= caps[p]]
        if not room:
            report.held.extend(members)
            continue
        for m in members:
            decide(m, room[0], "hash", group_key=key[:200], detail={"hash": round(u, 6), "group_size": k})

    for task in tasks:
        d = final.get(task.task_id)
        if d is None:
            continue
        if d.pool == "sft":
            report.sft.append(task.task_id)
        elif d.pool == "rl":
            report.rl.append(task.task_id)
        else:
            report.excluded[task.task_id] = d.reason
    report.new = sum(1 for d in decisions if d.pool in POOLS)
    return report, decisions


def assign_pools(
    store: Any,
    tasks: list[TrainingTask],
    benchmarks: list[BenchmarkTask],
    settings: TrainingSettings,
    *,
    seed: int,
    run_id: str = "",
    write: bool = True,
) -> PoolReport:
    """Decide the pool of every task (per language) and record the new decisions."""
    stored = stored_pools(store)
    report = PoolReport()
    by_lang: dict[str, list[TrainingTask]] = defaultdict(list)
    for task in tasks:
        by_lang[task.lang].append(task)
    decisions: list[PoolDecision] = []
    for lang in sorted(by_lang):
        pools, new = _lang_pools(by_lang[lang], benchmarks, stored, lang, settings, seed, run_id)
        report.langs[lang] = pools
        decisions.extend(new)
    if write and decisions:
        store.append("training_pools", [d.model_dump(mode="json") for d in decisions], name="training-pools")
    report.written = len(decisions) if write else 0
    return report


def check_disjoint(sft: list[TrainingTask], rl: list[TrainingTask], settings: TrainingSettings) -> list[tuple[str, str]]:
    """(RL task id, problem) for each RL task that is, shares the support set of, or
    near-duplicates the question of an SFT task of its language; empty when none."""
    problems = []
    for lang in sorted({t.lang for t in sft} | {t.lang for t in rl}):
        index = SimilarityIndex(lang, settings.dup_jaccard, settings.dup_perm)
        for task in sft:
            if task.lang == lang:
                index.add(task.task_id, task.question, task.support_chunk_ids)
        for task in rl:
            if task.lang != lang:
                continue
            if task.task_id in index:
                problems.append((task.task_id, f"{task.task_id} is in both pools"))
            for m in index.matches(task.question, task.support_chunk_ids, skip=task.task_id):
                problems.append((task.task_id, f"RL task {task.task_id} and SFT task {m.key}: {m.kind.replace('_', ' ')}"))
    return problems
