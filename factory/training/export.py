"""`export_training`: pools, teacher episodes, round-sliced samples, the datamix, the files.

    OUT/sft/train.jsonl, OUT/sft/train.parquet   SFT samples after the datamix
    OUT/sft/all.jsonl                             every round-sliced sample before it
    OUT/rl/train.jsonl, OUT/rl/train.parquet      the RL pool: question, gold chunk ids, language
    OUT/pools.jsonl                               every task's pool, or why it is out
    OUT/datamix.json, OUT/summary.json, OUT/card.md

The files are rewritten from the store on every export; the pools in the store only
grow, so an export at the end of each scheduled run holds everything so far.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from factory.clock import utc_now, utc_stamp
from factory.settings import Settings, TrainingSettings
from factory.store.runs import record_run
from factory.training.card import write_card
from factory.training.datamix import MixReport, mix
from factory.training.pools import LangPools, assign_pools, check_disjoint
from factory.training.slicing import slice_episode
from factory.training.tasks import TrainingError, TrainingTask, gather_benchmark_tasks, load_tasks
from factory.training.trajectories import EpisodeLink, load_episodes, run_teacher, stored_links, teacher_name

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class TrainingExportSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: str
    run_id: str
    seed: int
    written_at: str
    langs: list[str] = Field(default_factory=list)
    tasks: int = 0
    pools: dict[str, LangPools] = Field(default_factory=dict)
    excluded_by: dict[str, int] = Field(default_factory=dict)
    benchmark_tasks: int = 0
    disjoint: bool = True
    disjoint_problems: list[str] = Field(default_factory=list)
    teacher: str | None = None
    episodes_run: int = 0
    episodes: int = 0
    low_recall_episodes: int = 0
    samples_before: int = 0
    samples_after: int = 0
    samples: dict[str, dict[str, int]] = Field(default_factory=dict, description="lang -> before/after the datamix")
    assistant_turns: int = 0
    masked_turns: int = 0
    rl_tasks: int = 0
    tv_before: dict[str, float] = Field(default_factory=dict)
    tv_after: dict[str, float] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


# ------------------------------------------------------------------ difficulty
def task_difficulty(task: TrainingTask, links: list[EpisodeLink], s: TrainingSettings) -> str:
    """easy / medium / hard by agent recall: the factory's difficulty check when it ran, else the teacher's."""
    agent = task.difficulty.get("agent") if isinstance(task.difficulty.get("agent"), dict) else {}
    value = agent.get("recall") if agent else None
    if value is None and links:
        value = sum(l.recall for l in links) / len(links)
    if value is None:
        return "unknown"
    return "easy" if value >= s.easy_recall else "hard" if value < s.hard_recall else "medium"


# ------------------------------------------------------------------ searchers
def _searcher_for(lang: str, store: Any, settings: Settings, out: Path, index: Any, index_dir: Path | None,
                  notes: list[str]) -> tuple[Any, Any]:
    """(searcher, text_of) for the teacher in ``lang``."""
    from factory.agent.difficulty import resolve_searcher
    from factory.index.fixed import build_index, open_index

    if isinstance(index, dict):
        index = index.get(lang)
    if index is None and index_dir is not None:
        opened = open_index(index_dir, store=store, settings=settings)
        if opened.manifest.lang == lang:
            index = opened
        else:
            notes.append(f"{index_dir} indexes {opened.manifest.lang}, not {lang}: a BM25 index was built for {lang}")
    if index is None:
        target = out / "index" / lang
        try:
            index = open_index(target, store=store, settings=settings)
        except Exception:  # noqa: BLE001 - missing or stale: build it
            build_index(store, target, lang, settings, dense=None, progress=False)
            index = open_index(target, store=store, settings=settings)
            notes.append(f"no index given for {lang}: the teacher searched a BM25 index built in {target}")
    searcher, text_of, _ = resolve_searcher(index, settings.agent.searcher)
    return searcher, text_of


# ------------------------------------------------------------------ files
_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                   ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(_CALL)),
                      ("tool_call_id", pa.string()), ("name", pa.string()), ("weight", pa.int8()),
                      ("call_weights", pa.list_(pa.int8()))])  # per call, only on turns with several calls
SFT_SCHEMA = pa.schema([
    ("sample_id", pa.string()), ("messages", pa.list_(_MESSAGE)), ("tools", pa.string()),
    ("episode_id", pa.string()), ("task_id", pa.string()), ("lang", pa.string()), ("round_no", pa.int32()),
    ("episode_rounds", pa.int32()), ("ending_action", pa.string()), ("ended_by", pa.string()), ("turns", pa.int32()),
    ("masked_turns", pa.int32()), ("mask_reasons", pa.list_(pa.string())), ("final_recall", pa.float64()),
    ("trajectory_recall", pa.float64()), ("low_recall", pa.bool_()), ("teacher", pa.string()), ("model", pa.string()),
    ("protocol", pa.string()), ("profile", pa.string()), ("mechanic", pa.string()), ("cell", pa.string()),
    ("difficulty", pa.string()), ("completeness", pa.string()), ("question", pa.string()),
    ("gold_chunk_ids", pa.list_(pa.string())), ("state", pa.string()), ("copy", pa.int32()), ("upsampled", pa.bool_()),
])
RL_SCHEMA = pa.schema([
    ("task_id", pa.string()), ("lang", pa.string()), ("question", pa.string()), ("gold_chunk_ids", pa.list_(pa.string())),
    ("answer", pa.string()), ("answer_aliases", pa.list_(pa.string())), ("answer_chunk_id", pa.string()),
    ("mechanic", pa.string()), ("cell", pa.string()),
])


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _parquet_row(sample: dict[str, Any]) -> dict[str, Any]:
    row = dict(sample)
    row["tools"] = json.dumps(sample["tools"], ensure_ascii=False)
    row["state"] = json.dumps(sample["state"], ensure_ascii=False)
    row["messages"] = [
        {"role": m["role"], "content": m.get("content"), "tool_calls": m.get("tool_calls") or [],
         "tool_call_id": m.get("tool_call_id"), "name": m.get("name"), "weight": m.get("weight"),
         "call_weights": m.get("call_weights")}
        for m in sample["messages"]
    ]
    return row


def write_sft(out: Path, samples: list[dict[str, Any]]) -> None:
    _write_jsonl(out / "train.jsonl", samples)
    table = pa.Table.from_pylist([_parquet_row(s) for s in samples], schema=SFT_SCHEMA)
    pq.write_table(table, out / "train.parquet")


def rl_row(task: TrainingTask) -> dict[str, Any]:
    return {"task_id": task.task_id, "lang": task.lang, "question": task.question,
            "gold_chunk_ids": list(task.support_chunk_ids), "answer": task.answer,
            "answer_aliases": list(task.answer_aliases), "answer_chunk_id": task.answer_chunk_id,
            "mechanic": task.mechanic, "cell": task.cell}


def write_rl(out: Path, tasks: list[TrainingTask]) -> None:
    rows = [rl_row(t) for t in tasks]
    _write_jsonl(out / "train.jsonl", rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=RL_SCHEMA), out / "train.parquet")


# ------------------------------------------------------------------ the step
def export_training(
    store: Any,
    out_dir: str | Path,
    settings: Settings,
    *,
    teacher: str | None = None,
    llm: Any = None,
    index: Any = None,
    index_dir: str | Path | None = None,
    exclude_benchmarks: Iterable[str | Path] = (),
    langs: Iterable[str] | None = None,
    run_id: str | None = None,
    progress: Progress | None = None,
) -> TrainingExportSummary:
    """Assign pools, run the teacher on SFT tasks still without episodes, slice, mix, write.

    ``teacher``: an LLM spec (default ``training.teacher``; None runs no new episodes);
    ``llm``: an LLM object to use instead of building one from the spec (tests, a shared
    gateway). ``index``: a fixed index (or a dict lang -> index, or a bare searcher);
    ``index_dir``: a fixed index folder; with neither, a BM25 index is built in OUT/index/LANG.
    """
    s = settings.training
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run_id = run_id or f"training-{utc_stamp('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    notes: list[str] = []
    record_run(store, run_id, "export-training", settings)

    # pools
    tasks = load_tasks(store, langs)
    if not tasks:
        notes.append("the store holds no accepted tasks")
    benchmarks = gather_benchmark_tasks(store, exclude_benchmarks, include_build_runs=s.exclude_build_runs)
    pools = assign_pools(store, tasks, benchmarks, s, seed=settings.seed, run_id=run_id)
    by_id = {t.task_id: t for t in tasks}
    sft = [by_id[i] for p in pools.langs.values() for i in p.sft]
    rl = [by_id[i] for p in pools.langs.values() for i in p.rl]
    problems = check_disjoint(sft, rl, s)
    if problems:
        # only stored decisions made under other settings (a lower dup_jaccard now) can get here:
        # such RL tasks are held out of the RL file rather than shipped next to their SFT twin
        clash = {task_id for task_id, _ in problems}
        rl = [t for t in rl if t.task_id not in clash]
        notes.append(f"{len(clash)} RL task(s) held out of rl/ because they overlap SFT tasks: "
                     + "; ".join(text for _, text in problems[:5]))
    remaining = check_disjoint(sft, rl, s)

    # teacher episodes
    spec = teacher or s.teacher
    name = teacher_name(spec) if spec else (f"{getattr(llm, 'name', 'llm')}:{getattr(llm, 'model', '')}" if llm else None)
    run = 0
    started: set[str] = set()  # tasks the teacher ran on now (training.max_teacher_tasks counts them)
    if (spec or llm is not None) and sft:
        gateway = None
        if llm is None:
            from factory.llm.registry import make_gateway

            llm = gateway = make_gateway(spec, settings, store, run_id=run_id, stage_default="training")
        try:
            for lang in sorted({t.lang for t in sft}):
                lang_sft = [t for t in sft if t.lang == lang]
                searcher, text_of = _searcher_for(lang, store, settings, out, index,
                                                  Path(index_dir) if index_dir else None, notes)
                done = [0]

                def tick(_link: EpisodeLink, lang: str = lang, total: int = len(lang_sft) * s.episodes_per_task) -> None:
                    done[0] += 1
                    if progress is not None:
                        progress(f"teacher {lang}", done[0], total)

                budget = None if s.max_teacher_tasks is None else s.max_teacher_tasks - len(started)
                links = run_teacher(store, lang_sft, searcher, llm, settings, teacher=name or "", lang=lang,
                                    text_of=text_of, run_id=run_id, limit=budget, progress=tick)
                started.update(link.task_id for link in links)
                run += len(links)
        finally:
            if gateway is not None:
                gateway.close()

    # samples
    links = stored_links(store, [t.task_id for t in sft])
    traces = load_episodes(store, [l.episode_id for l in links])
    links_of: dict[str, list[EpisodeLink]] = {}
    for link in links:
        links_of.setdefault(link.task_id, []).append(link)
    samples_by_lang: dict[str, list[dict[str, Any]]] = {}
    for task in sft:
        difficulty = task_difficulty(task, links_of.get(task.task_id, []), s)
        for link in links_of.get(task.task_id, []):
            trace = traces.get(link.episode_id)
            if trace is None:
                notes.append(f"episode {link.episode_id} of {task.task_id} is linked but not in agent_episodes")
                continue
            samples_by_lang.setdefault(task.lang, []).extend(slice_episode(trace, task, link, difficulty))
    every = [x for lang in sorted(samples_by_lang) for x in samples_by_lang[lang]]
    mixed: list[dict[str, Any]] = []
    mixes: list[MixReport] = []
    for lang in sorted(samples_by_lang):
        kept, report = mix(samples_by_lang[lang], s, seed=settings.seed, lang=lang)
        mixed.extend(kept)
        mixes.append(report)

    # files
    _write_jsonl(out / "sft" / "all.jsonl", every)
    write_sft(out / "sft", mixed)
    write_rl(out / "rl", rl)
    pool_rows = []
    for lang, p in sorted(pools.langs.items()):
        pool_rows += [{"task_id": i, "lang": lang, "pool": "sft", "reason": ""} for i in p.sft]
        pool_rows += [{"task_id": i, "lang": lang, "pool": "rl", "reason": ""} for i in p.rl]
        pool_rows += [{"task_id": i, "lang": lang, "pool": "excluded", "reason": r} for i, r in sorted(p.excluded.items())]
        pool_rows += [{"task_id": i, "lang": lang, "pool": "held", "reason": "pool_full"} for i in p.held]
    _write_jsonl(out / "pools.jsonl", pool_rows)
    (out / "datamix.json").write_text(
        json.dumps([m.model_dump() for m in mixes], indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    assistant = [m for x in every for m in x["messages"] if m["role"] == "assistant"]
    summary = TrainingExportSummary(
        out_dir=str(out), run_id=run_id, seed=settings.seed,
        written_at=utc_stamp("%Y-%m-%d %H:%M UTC"),
        langs=sorted(pools.langs), tasks=len(tasks), pools=pools.langs,
        excluded_by=dict(Counter(r for p in pools.langs.values() for r in p.excluded.values())),
        benchmark_tasks=len(benchmarks), disjoint=not remaining, disjoint_problems=[text for _, text in problems],
        teacher=name, episodes_run=run, episodes=len(links), low_recall_episodes=sum(l.low_recall for l in links),
        samples_before=len(every), samples_after=len(mixed), assistant_turns=len(assistant),
        masked_turns=sum(1 for m in assistant if m.get("weight") == 0), rl_tasks=len(rl),
        samples={m.lang: {"before": m.samples_before, "after": m.samples_after} for m in mixes},
        tv_before={m.lang: m.tv_before for m in mixes}, tv_after={m.lang: m.tv_after for m in mixes},
        files=["sft/train.jsonl", "sft/train.parquet", "sft/all.jsonl", "rl/train.jsonl", "rl/train.parquet",
               "pools.jsonl", "datamix.json", "summary.json", "card.md"],
        notes=notes,
    )
    write_card(out / "card.md", summary, mixes, links)
    (out / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    store.append("training_exports", [{
        "export_id": run_id, "out_dir": str(out.resolve()),
        # counts, not the id lists (pools.jsonl and the training_pools table hold those)
        "summary": {**summary.model_dump(mode="json", exclude={"pools"}), "pools": {
            lang: {"sft": len(p.sft), "rl": len(p.rl), "excluded": len(p.excluded), "held": len(p.held), "new": p.new,
                   "newly_excluded": len(p.newly_excluded)} for lang, p in summary.pools.items()}},
        "settings": json.loads(settings.dump()), "started_at": utc_now(),
    }], name="training-exports")
    if remaining:
        raise TrainingError(f"{out}: the pools are not disjoint ({remaining[0][1]}); see summary.json")
    return summary
