"""Teacher episodes on SFT tasks: run the search agent, store every episode, link it to its task.

The agent writes each episode's trace itself (``agent_episodes``, ``agent_rounds``,
``agent_turns``, stage ``training``, item id = task id); a ``training_episodes`` row
then links it to the task with its final recall. Only linked episodes are exported,
so an episode cut short by a crash (trace written, link not) is simply run again, and
the LLM gateway answers the calls it had already made from its cache.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

from pydantic import BaseModel, ConfigDict

from factory.agent.trace import EpisodeTrace, trace_from_rows
from factory.settings import Settings
from factory.training.tasks import TrainingTask

STAGE = "training"


class EpisodeLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: str
    task_id: str
    lang: str
    teacher: str
    model: str = ""
    rollout: int = 0
    recall: float
    trajectory_recall: float
    rounds: int
    rejections: int
    finalized_by: str = ""
    low_recall: bool
    error: str | None = None
    run_id: str = ""


def recall(found: Iterable[str], gold: Iterable[str]) -> float:
    gold = set(gold)
    return len(gold & set(found)) / len(gold) if gold else 0.0


def link_for(trace: EpisodeTrace, task: TrainingTask, teacher: str, low_recall: float, run_id: str = "") -> EpisodeLink:
    final = recall([r.chunk_id for r in trace.ranking], task.support_chunk_ids)
    return EpisodeLink(
        episode_id=trace.episode_id, task_id=task.task_id, lang=task.lang, teacher=teacher, model=trace.model,
        rollout=trace.rollout, recall=final, trajectory_recall=recall(trace.seen, task.support_chunk_ids),
        rounds=len(trace.rounds), rejections=trace.rejections, finalized_by=trace.finalized_by,
        low_recall=final < low_recall, error=trace.error, run_id=run_id,
    )


def stored_links(store: Any, task_ids: Iterable[str] | None = None) -> list[EpisodeLink]:
    rows = store.query("SELECT * FROM training_episodes ORDER BY task_id, teacher, rollout, episode_id")
    wanted = set(task_ids) if task_ids is not None else None
    fields = set(EpisodeLink.model_fields)
    return [
        EpisodeLink.model_validate({k: v for k, v in r.items() if k in fields})
        for r in rows if wanted is None or r["task_id"] in wanted
    ]


def teacher_name(spec: str) -> str:
    """The spec as recorded: backend, local model name or file, served model; no URLs, no options."""
    from factory.llm.spec import parse_spec

    parsed = parse_spec(spec)
    if parsed.backend == "openai":
        return parsed.redacted()  # the endpoint may change between runs; the served model is the identity
    return parsed.backend + (f":{parsed.target}" if parsed.target else "") + (f"#{parsed.model}" if parsed.model else "")


def run_teacher(
    store: Any,
    tasks: list[TrainingTask],
    searcher: Any,
    llm: Any,
    settings: Settings,
    *,
    teacher: str,
    lang: str,
    text_of: Callable[[str], str] | None = None,
    run_id: str = "",
    limit: int | None = None,
    progress: Callable[[EpisodeLink], None] | None = None,
) -> list[EpisodeLink]:
    """Run the episodes still missing (``training.episodes_per_task`` per task and teacher)."""
    from factory.agent.loop import SearchAgent

    s = settings.training
    have: dict[str, set[int]] = {}
    for link in stored_links(store, [t.task_id for t in tasks]):
        if link.teacher == teacher:
            have.setdefault(link.task_id, set()).add(link.rollout)
    jobs: list[tuple[TrainingTask, int]] = []
    started: set[str] = set()
    for task in tasks:
        missing = [r for r in range(s.episodes_per_task) if r not in have.get(task.task_id, set())]
        if not missing:
            continue
        if limit is not None and len(started) >= limit:
            break
        started.add(task.task_id)
        jobs.extend((task, r) for r in missing)
    agent = SearchAgent(searcher, llm, settings, text_of=text_of, store=store, lang=lang, stage=STAGE, run_id=run_id)

    def one(job: tuple[TrainingTask, int]) -> EpisodeLink:
        task, rollout = job
        trace = agent.episode(task.question, item_id=task.task_id, rollout=rollout)  # written by the agent
        link = link_for(trace, task, teacher, s.low_recall, run_id)
        store.append("training_episodes", [link.model_dump()], name="training-episodes")
        if progress is not None:
            progress(link)
        return link

    if s.teacher_concurrency == 1 or len(jobs) <= 1:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=s.teacher_concurrency) as pool:
        return list(pool.map(one, jobs))


# ------------------------------------------------------------------ loading
def load_episodes(store: Any, episode_ids: list[str]) -> dict[str, EpisodeTrace]:
    """Many episodes at once (three queries in all), as ``factory.agent.load_episode`` rebuilds one."""
    if not episode_ids:
        return {}
    con = store.connect()
    try:
        def rows(sql: str) -> list[dict[str, Any]]:
            cur = con.execute(sql, [episode_ids])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

        episodes = rows("SELECT * FROM agent_episodes WHERE episode_id IN (SELECT unnest(?))")
        rounds = rows("SELECT * FROM agent_rounds WHERE episode_id IN (SELECT unnest(?)) ORDER BY episode_id, round_no")
        turns = rows("SELECT * FROM agent_turns WHERE episode_id IN (SELECT unnest(?)) ORDER BY episode_id, turn_no")
    finally:
        con.close()
    rounds_of: dict[str, list[dict[str, Any]]] = {}
    for r in rounds:
        rounds_of.setdefault(r["episode_id"], []).append(r)
    turns_of: dict[str, list[dict[str, Any]]] = {}
    for t in turns:
        turns_of.setdefault(t["episode_id"], []).append(t)
    return {e["episode_id"]: trace_from_rows(e, rounds_of.get(e["episode_id"], []), turns_of.get(e["episode_id"], []))
            for e in episodes}
