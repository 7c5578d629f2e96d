"""Scoring a retriever on a benchmark folder: Recall@k, trajectory recall, TREC run files.

* **Recall@k** is computed on the final set: the first ``k`` items of the ranking
  *before* they are mapped to the scoring unit and deduplicated, so a retriever
  gains nothing from returning several chunks of one document.
* **Trajectory recall** counts every unique result the retriever ever saw (for the
  agent: every search result of every rollout; for a plain retriever: its top k).
* The **scoring unit** is the chunk or its parent document (``doc_id`` in
  ``corpus.jsonl``, else a ``DOCID_N`` chunk id read back); a document counts once.
* **Run files** list each query's final set in the unit, score descending then id
  ascending, so any TREC evaluator (ir-measures, trec_eval) reproduces Recall@k.
* **How the agent's episodes ended**, per query and in total: ``finalized`` (the model's
  own ranking), ``fallback`` (it never finalized; the harness ranked saved then seen
  chunks) or ``error`` (the model call failed on every try). Recall@k is given over
  all queries and over the finalized ones, so the model's rankings are not mixed with
  the harness's.

The folder is BEIR-style (``factory.benchmark_folder`` reads it): ``corpus.jsonl``
(``_id``, ``title``, ``text``, optional ``doc_id``), ``queries.jsonl`` (``_id``,
``text``, optional ``mechanic``), the judgements (``qrels/test.tsv`` or another split)
and optionally the fixed index it was validated against in ``index/``.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field

from factory.benchmark_folder import (
    BenchmarkFolderError, find_qrels, read_corpus, read_qrels, read_queries, record_field, trec_id,
)

Unit = Literal["chunk", "doc"]
RETRIEVERS = ("bm25", "dense", "hybrid", "agent")
OUTCOMES = ("finalized", "fallback", "error")


BenchmarkError = BenchmarkFolderError  # a bad folder, or a bad request about one


@dataclass
class Query:
    qid: str
    text: str
    mechanic: str = ""


@dataclass
class Benchmark:
    root: Path
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    doc_of: dict[str, str] = field(default_factory=dict)

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"

    def unit_of(self, chunk_id: str, unit: Unit) -> str:
        if unit == "chunk":
            return chunk_id
        doc = self.doc_of.get(chunk_id)
        if doc:
            return doc
        match = re.fullmatch(r"(.+)_\d+", chunk_id)  # BrowseComp-Plus style DOCID_CHUNKNO
        return match.group(1) if match else chunk_id

    def relevant(self, qid: str, unit: Unit) -> set[str]:
        return {self.unit_of(c, unit) for c, rel in self.qrels.get(qid, {}).items() if rel > 0}


def load_benchmark(root: str | Path, split: str | None = None) -> Benchmark:
    root = Path(root)
    if not root.is_dir():
        raise BenchmarkError(f"{root}: no benchmark folder here")
    doc_of = {p.chunk_id: p.doc_id for p in read_corpus(root / "corpus.jsonl") if p.doc_id}
    queries = []
    for q in read_queries(root / "queries.jsonl"):
        if not q.text.strip():
            raise BenchmarkError(f"{q.where}: query {q.qid!r} has no text")
        queries.append(Query(q.qid, q.text, str(record_field(q.record, "mechanic") or "")))
    qrels_path = find_qrels(root, split)
    qrels = read_qrels(qrels_path)
    known = {q.qid for q in queries}
    stray = sorted(set(qrels) - known)
    if stray:
        raise BenchmarkError(f"{qrels_path}: judgements for queries not in queries.jsonl: {', '.join(stray[:5])}")
    return Benchmark(root=root, queries=queries, qrels=qrels, doc_of=doc_of)


# ---------------------------------------------------------------- scoring
class QueryRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    qid: str
    ranking: list[tuple[str, float]] = Field(description="chunk ids with scores, best first")
    seen: list[str] = Field(default_factory=list, description="every unique chunk seen (trajectory)")
    searches: int = 0
    rounds: float = 0.0
    episode_ids: list[str] = Field(default_factory=list)
    ended: dict[str, int] = Field(default_factory=dict, description="agent episodes by how they ended")


def query_outcome(ended: dict[str, int]) -> str:
    """One query's ending over its rollouts: finalized only when every rollout finalized."""
    if ended.get("error"):
        return "error"
    return "fallback" if ended.get("fallback") else "finalized"


def final_units(ranking: list[tuple[str, float]], bench: Benchmark, unit: Unit, k: int) -> list[tuple[str, float]]:
    """The first k items, mapped to the unit, each unit once (with its best score)."""
    out: dict[str, float] = {}
    for chunk_id, score in ranking[:k]:
        key = bench.unit_of(chunk_id, unit)
        if key not in out:
            out[key] = score
    return sorted(out.items(), key=lambda item: (-item[1], item[0]))


def recall_at_k(ranking: list[str], relevant: set[str], k: int = 10, unit_of: Callable[[str], str] = str) -> float:
    if not relevant:
        return 0.0
    return len({unit_of(c) for c in ranking[:k]} & relevant) / len(relevant)


def trajectory_recall(seen: Iterable[str], relevant: set[str], unit_of: Callable[[str], str] = str) -> float:
    if not relevant:
        return 0.0
    return len({unit_of(c) for c in seen} & relevant) / len(relevant)


class EvalReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    retriever: str
    unit: str
    k: int
    queries: int
    recall: float
    trajectory_recall: float
    per_mechanic: dict[str, dict[str, float]] = Field(default_factory=dict)
    per_query: list[dict[str, Any]] = Field(default_factory=list)
    searches_mean: float = 0.0
    ended: dict[str, int] = Field(default_factory=dict, description="agent: queries by how their episodes ended")
    finalized_queries: int = 0
    recall_finalized: float | None = Field(None, description="agent: Recall@k over the finalized queries")
    rollouts: int = 0
    llm: str = ""
    elapsed_s: float = 0.0
    run_file: str = ""


def score(bench: Benchmark, runs: dict[str, QueryRun], retriever: str, unit: Unit = "chunk", k: int = 10) -> EvalReport:
    """Recall@k and trajectory recall over the queries that have judgements."""
    per_query = []
    for query in bench.queries:
        relevant = bench.relevant(query.qid, unit)
        if not relevant:
            continue
        run = runs.get(query.qid) or QueryRun(qid=query.qid, ranking=[])
        unit_of = lambda c: bench.unit_of(c, unit)  # noqa: E731
        per_query.append({
            "qid": query.qid,
            "mechanic": query.mechanic or "(none)",
            "recall": recall_at_k([c for c, _ in run.ranking], relevant, k, unit_of),
            "trajectory_recall": trajectory_recall(run.seen or [c for c, _ in run.ranking[:k]], relevant, unit_of),
            "relevant": len(relevant),
            "searches": run.searches,
            **({"ended": query_outcome(run.ended), **{o: run.ended.get(o, 0) for o in OUTCOMES}} if run.ended else {}),
        })
    n = len(per_query)
    mean = lambda rows, key: sum(r[key] for r in rows) / len(rows) if rows else 0.0  # noqa: E731
    mechanics: dict[str, list[dict[str, Any]]] = {}
    for row in per_query:
        mechanics.setdefault(row["mechanic"], []).append(row)
    agent = any("ended" in row for row in per_query)
    finalized = [row for row in per_query if row.get("ended") == "finalized"]
    return EvalReport(
        retriever=retriever,
        unit=unit,
        k=k,
        queries=n,
        recall=mean(per_query, "recall"),
        trajectory_recall=mean(per_query, "trajectory_recall"),
        per_mechanic={
            m: {"queries": len(rows), "recall": mean(rows, "recall"), "trajectory_recall": mean(rows, "trajectory_recall")}
            for m, rows in sorted(mechanics.items())
        },
        per_query=per_query,
        searches_mean=mean(per_query, "searches"),
        ended={o: sum(row.get("ended") == o for row in per_query) for o in OUTCOMES} if agent else {},
        finalized_queries=len(finalized),
        recall_finalized=mean(finalized, "recall") if finalized else None,
    )


def write_trec_run(path: str | Path, bench: Benchmark, runs: dict[str, QueryRun], unit: Unit, k: int, tag: str) -> Path:
    """``qid Q0 id rank score tag`` lines: each query's final set in the unit."""
    path = Path(path)
    lines = []
    for query in bench.queries:
        run = runs.get(query.qid)
        if run is None:
            continue
        for rank, (doc, value) in enumerate(final_units(run.ranking, bench, unit, k), 1):
            lines.append(f"{trec_id(query.qid)} Q0 {trec_id(doc)} {rank} {value:.6f} {tag}")
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return path


def write_trec_qrels(path: str | Path, bench: Benchmark, unit: Unit) -> Path:
    """The judgements in the unit (a document relevant once), for outside evaluators."""
    path = Path(path)
    lines = []
    for query in bench.queries:
        for doc in sorted(bench.relevant(query.qid, unit)):
            lines.append(f"{trec_id(query.qid)} 0 {trec_id(doc)} 1")
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return path


# ----------------------------------------------------------------- running
def run_searcher(bench: Benchmark, searcher: Any, k: int = 10) -> dict[str, QueryRun]:
    texts = [q.text for q in bench.queries]
    many = getattr(searcher, "search_many", None)
    results = many(texts, k) if callable(many) else [searcher.search(t, k) for t in texts]
    return {
        q.qid: QueryRun(qid=q.qid, ranking=[(h.chunk_id, h.score) for h in hits], seen=[h.chunk_id for h in hits])
        for q, hits in zip(bench.queries, results)
    }


def run_agent(
    bench: Benchmark, agent: Any, rollouts: int, *, concurrency: int = 1, progress: Callable[[], None] | None = None
) -> dict[str, QueryRun]:
    """The agent on every query (queries in parallel up to ``concurrency``)."""

    def one(query: Query) -> QueryRun:
        result = agent.run(query.text, item_id=query.qid, rollouts=rollouts)
        if progress is not None:
            progress()
        episodes = result.episodes
        return QueryRun(
            qid=query.qid,
            ranking=[(r.chunk_id, r.score) for r in result.ranking],
            seen=result.trajectory,
            searches=sum(e.searches for e in episodes),
            rounds=sum(len(e.rounds) for e in episodes) / max(1, len(episodes)),
            episode_ids=[e.episode_id for e in episodes],
            ended={o: sum(e.outcome == o for e in episodes) for o in OUTCOMES},
        )

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return {run.qid: run for run in pool.map(one, bench.queries)}


def detect_lang(texts: Iterable[str]) -> str:
    cyrillic = latin = 0
    for text in texts:
        cyrillic += len(re.findall(r"[\u0400-\u04ff]", text))
        latin += len(re.findall(r"[A-Za-z]", text))
    return "ru" if cyrillic > latin else "en"


def open_benchmark_index(bench: Benchmark, settings: Any = None, *, scratch: Path | None = None, dense: str | None = "default"):
    """The folder's fixed index, checked against its corpus.jsonl; built into
    ``scratch`` (a temporary folder by default) when the folder has none."""
    from factory.index.fixed import build_index_from_chunks, open_index

    from factory.index.base import SearchIndexError

    folder = bench.root / "index"
    if folder.exists():
        return open_index(folder, corpus_path=bench.corpus_path, settings=settings)
    target = (scratch or Path(tempfile.mkdtemp(prefix="factory-eval-"))) / "index"
    if (target / "manifest.json").is_file():
        try:  # built by an earlier run over the same corpus
            index = open_index(target, corpus_path=bench.corpus_path, settings=settings)
            if index.has_dense or dense in (None, "none"):
                return index
        except SearchIndexError:
            pass
    chunks = [{"chunk_id": p.chunk_id, "title": p.title, "text": p.text} for p in read_corpus(bench.corpus_path)]
    lang = detect_lang(c["text"] for c in chunks[:200])
    build_index_from_chunks(chunks, target, lang, settings, dense, progress=False)
    return open_index(target, corpus_path=bench.corpus_path, settings=settings)


def evaluate(
    bench: Benchmark,
    retriever: str,
    *,
    index: Any,
    llm: Any = None,
    settings: Any = None,
    rollouts: int = 1,
    unit: Unit = "chunk",
    k: int = 10,
    out: Path | None = None,
    store: Any = None,
    progress: Callable[[], None] | None = None,
) -> EvalReport:
    """Run one retriever over the benchmark, score it, and write run/metrics files to ``out``."""
    if retriever not in RETRIEVERS:
        raise BenchmarkError(f"unknown retriever {retriever!r}; choose {', '.join(RETRIEVERS)}")
    started = time.perf_counter()
    if retriever == "agent":
        if llm is None:
            raise BenchmarkError("the agent retriever needs an LLM (--llm SPEC)")
        from factory.agent import SearchAgent
        from factory.settings import Settings

        settings = settings or Settings()
        agent = SearchAgent(
            index.searcher(settings.agent.searcher), llm, settings, text_of=index.index_text, store=store,
            lang=index.lang, stage="eval",
        )
        query_workers = max(1, settings.agent.concurrency // max(1, rollouts))
        runs = run_agent(bench, agent, rollouts, concurrency=query_workers, progress=progress)
    else:
        runs = run_searcher(bench, index.searcher(retriever), k)
    report = score(bench, runs, retriever, unit, k)
    report.rollouts = rollouts if retriever == "agent" else 0
    report.llm = f"{getattr(llm, 'name', '')}:{getattr(llm, 'model', '')}" if retriever == "agent" else ""
    report.elapsed_s = time.perf_counter() - started
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        name = f"run.{retriever}.trec" if unit == "chunk" else f"run.{retriever}.{unit}.trec"
        run_file = write_trec_run(out / name, bench, runs, unit, k, tag=f"factory-{retriever}")
        write_trec_qrels(out / f"qrels.{unit}.trec", bench, unit)
        report.run_file = str(run_file)
        _write_metrics(out / "metrics.json", report)
    return report


def _write_metrics(path: Path, report: EvalReport) -> None:
    """metrics.json holds one entry per retriever and unit; other entries are kept."""
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {}
    data[f"{report.retriever}/{report.unit}"] = report.model_dump(mode="json")
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
