"""The search agent's cost: harness overhead per step, and full episodes with the embedded model.

    .venv/bin/python -m bench.agent                    # both parts (minutes: the real model is slow on CPU)
    .venv/bin/python -m bench.agent --no-model         # harness overhead only
    .venv/bin/python -m bench.agent --questions 3 --llm llamacpp:smollm2-135m
    .venv/bin/python -m bench.agent --make-benchmark outputs/wiki-eval   # a BEIR folder for `factory eval`

Corpus: the shared en-wiki-vital leads, one chunk per document (``ID_0``), in a BM25
fixed index built into a temporary folder.

1. **Harness overhead**: a scripted FakeLLM (no model time) plays a long, rule-abiding
   episode: searches with fresh queries, a save after each five, a final ranking.
   Reported per turn: wall time, time inside the searcher, time inside the model
   call, and the rest (prompt rendering, guardrails, result formatting, tracing).
2. **Embedded model**: questions written from a document's Wikidata-style
   description ("Which subject is described as: ...?"), gold = that document's
   chunk. Reported per episode: wall time, turns, searches, rounds, rejected calls,
   how it ended, recall of the final ranking and of the trajectory.

Prints one JSON line per figure and a final summary line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench import common
from bench.common import EN_WIKI as CORPUS
from factory.agent import SearchAgent
from factory.index.fixed import build_index_from_chunks, open_index
from factory.llm.fake import FakeLLM
from factory.settings import Settings

FIGURES: list[dict] = []


def emit(**figure) -> None:
    FIGURES.append(common.emit(figure))


class Timed:
    """Wraps a searcher or an LLM and adds up the time spent inside it."""

    def __init__(self, inner, method: str) -> None:
        self.inner, self.method, self.seconds, self.calls = inner, method, 0.0, 0
        for attr in ("name", "model", "context_tokens", "supports_tools"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    def _timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return getattr(self.inner, self.method)(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1

    def search(self, query, k=10):
        return self._timed(query, k)

    def complete(self, request):
        return self._timed(request)


def load_docs(limit: int | None) -> list[dict]:
    docs = []
    with open(CORPUS, encoding="utf-8") as handle:
        for line in handle:
            docs.append(json.loads(line))
            if limit and len(docs) >= limit:
                break
    return docs


def scripted_policy(rounds: int, per_round: int, per_turn: int = 1):
    """Fresh queries from the results it saw; save after per_round searches (per_turn in each
    turn, as parallel calls); finalize in the last round."""
    import re

    counter = {"n": 0}

    def reply(request):
        counter["n"] += 1
        state = request.messages[1].content
        round_no = int(re.search(r"Round (\d+) of", state).group(1))
        searches = sum((m.content or "").count('"search_corpus"') for m in request.messages if m.role == "assistant")
        seen = re.findall(r"chunk_id: (\S+)", "\n".join(m.content or "" for m in request.messages))
        if searches < per_round:
            actions = [{"action": "search_corpus", "arguments": {"query": f"history of science topic {counter['n']} {i}",
                                                                 "top_k": 5}} for i in range(min(per_turn, per_round - searches))]
            return actions[0] if len(actions) == 1 else {"actions": actions}
        picks = [{"chunk_id": c, "reason": "it matched the topic of the question well"} for c in seen[:3]]
        coverage = {"covered_concepts": ["topic"], "unresolved_concepts": []}
        if round_no < rounds:
            return {"action": "save_and_advance", "arguments": {
                "saved_chunks": picks, "drop_from_saved": [], **coverage,
                "round_summary": "Searched the topic from several angles and kept the three best passages found.",
                "next_round_goal": "Look for passages that confirm the saved ones from another side."}}
        return {"action": "finalize_ranking", "arguments": {"ranking": picks, **coverage}}

    return reply


def bench_overhead(index, episodes: int, per_turn: int = 1) -> None:
    settings = Settings(agent={"profile": "standard"})
    rounds, per_round = settings.agent.standard.rounds, 8
    turn_times, search_times, model_times = [], [], []
    for e in range(episodes):
        searcher = Timed(index.searcher("bm25"), "search")
        llm = Timed(FakeLLM(default=scripted_policy(rounds, per_round, per_turn), context_tokens=131_072), "complete")
        agent = SearchAgent(searcher, llm, settings, text_of=index.index_text)
        start = time.perf_counter()
        trace = agent.episode(f"bench question {e}")
        wall = time.perf_counter() - start
        turns = len(trace.turns)
        assert trace.finalized_by == "model", [t.rejection for t in trace.turns if t.rejected]
        turn_times.append(wall / turns)
        search_times.append(searcher.seconds / max(1, searcher.calls))
        model_times.append(llm.seconds / turns)
        harness = (wall - searcher.seconds - llm.seconds) / turns
        emit(part="overhead", calls_per_turn=per_turn, episode=e, turns=turns, searches=trace.searches,
             rounds=len(trace.rounds),
             wall_s=round(wall, 4), per_turn_ms=round(wall / turns * 1000, 3),
             search_ms=round(searcher.seconds / max(1, searcher.calls) * 1000, 3),
             fake_model_ms=round(llm.seconds / turns * 1000, 3), harness_ms_per_turn=round(harness * 1000, 3))


def bench_model(index, docs: list[dict], spec: str, questions: int, max_rounds: int | None,
                max_turns: int | None) -> list[dict]:
    from factory.llm.registry import make_llm

    start = time.perf_counter()
    backend = make_llm(spec)
    emit(part="model_load", llm=spec, load_s=round(time.perf_counter() - start, 2), context_tokens=backend.context_tokens)
    agent_over: dict = {"max_rounds": max_rounds} if max_rounds else {}
    if max_turns:
        agent_over.update(small={"max_turns_per_round": max_turns}, standard={"max_turns_per_round": max_turns})
    settings = Settings(agent=agent_over)
    picked = [d for d in docs if d.get("description")]
    step = max(1, len(picked) // questions)
    results = []
    for i in range(questions):
        doc = picked[i * step]
        question = f"Which subject is described as: {doc['description']}?"
        gold = f"{doc['id']}_0"
        llm = Timed(backend, "complete")
        searcher = Timed(index.searcher("bm25"), "search")
        agent = SearchAgent(searcher, llm, settings, text_of=index.index_text, lang="en")
        start = time.perf_counter()
        trace = agent.episode(question, item_id=doc["id"])
        wall = time.perf_counter() - start
        figure = dict(
            part="episode", llm=spec, profile=trace.profile, protocol=trace.protocol, question=question, gold=gold,
            wall_s=round(wall, 2), model_s=round(llm.seconds, 2), turns=len(trace.turns), searches=trace.searches,
            rounds=len(trace.rounds), rejected=trace.rejections, ended=[r.ended_by for r in trace.rounds],
            finalized_by=trace.finalized_by, recall=float(gold in [r.chunk_id for r in trace.ranking]),
            trajectory_recall=float(gold in trace.seen), queries=trace.queries[:8],
            rejections=sorted({t.rejection for t in trace.turns if t.rejected}),
            tokens_in=trace.tokens_in, tokens_out=trace.tokens_out,
        )
        emit(**figure)
        results.append(figure)
    return results


def write_wiki_benchmark(out: Path, docs: list[dict], n_single: int, n_pair: int, dense: str | None) -> None:
    """A hand-built BEIR folder over en-wiki-vital (one chunk per lead), for `factory eval`.

    ``describe`` queries name a document by its description (one relevant chunk);
    ``link`` queries need two: a document found by its description and a document
    its lead mentions by title, itself named by its description.
    """
    import random
    import re

    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(13)
    by_title = {d["title"]: d for d in docs if d.get("description")}
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for d in docs:
            handle.write(json.dumps({"_id": f"{d['id']}_0", "title": d["title"], "text": d["text"], "doc_id": d["id"]},
                                    ensure_ascii=False) + "\n")
    described = [d for d in docs if d.get("description")]
    queries, qrels = [], []
    for d in rng.sample(described, n_single):
        queries.append({"_id": f"describe-{d['id']}", "text": f"Which subject is described as: {d['description']}?",
                        "mechanic": "describe"})
        qrels.append((queries[-1]["_id"], f"{d['id']}_0"))
    pairs = []
    titles = sorted((t for t in by_title if len(t) > 4), key=len, reverse=True)
    for d in rng.sample(described, len(described)):
        linked = next((by_title[t] for t in titles if t != d["title"] and re.search(rf"\b{re.escape(t)}\b", d["text"])), None)
        if linked is not None:
            pairs.append((d, linked))
        if len(pairs) == n_pair:
            break
    for d, linked in pairs:
        qid = f"link-{d['id']}-{linked['id']}"
        queries.append({"_id": qid, "mechanic": "link", "text":
                        f'The article on the subject described as "{d["description"]}" mentions a subject '
                        f'described as "{linked["description"]}". Which one?'})
        qrels += [(qid, f"{d['id']}_0"), (qid, f"{linked['id']}_0")]
    with open(out / "queries.jsonl", "w", encoding="utf-8") as handle:
        for q in queries:
            handle.write(json.dumps(q, ensure_ascii=False) + "\n")
    (out / "qrels").mkdir(exist_ok=True)
    (out / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t1\n" for q, c in qrels), encoding="utf-8"
    )
    chunks = [{"chunk_id": f"{d['id']}_0", "title": d["title"], "text": d["text"]} for d in docs]
    start = time.perf_counter()
    build_index_from_chunks(chunks, out / "index", "en", Settings(), dense=dense, progress=False)
    emit(part="benchmark", out=str(out), chunks=len(chunks), queries=len(queries), judgements=len(qrels),
         index_build_s=round(time.perf_counter() - start, 1), dense=dense)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=None, help="index only the first N documents")
    parser.add_argument("--episodes", type=int, default=5, help="scripted episodes for the overhead figure")
    parser.add_argument("--calls-per-turn", type=int, default=1,
                        help="searches the scripted model makes in one turn (parallel calls) for the overhead figure")
    parser.add_argument("--questions", type=int, default=3, help="episodes with the real model")
    parser.add_argument("--llm", default="llamacpp:smollm2-135m")
    parser.add_argument("--max-rounds", type=int, default=None, help="cap the agent's rounds (default: the profile's)")
    parser.add_argument("--max-turns", type=int, default=None, help="cap the turns per round (default: the profile's)")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--make-benchmark", type=Path, default=None,
                        help="only write a hand-built BEIR folder over the corpus (with its index) and stop")
    parser.add_argument("--single", type=int, default=20, help="describe queries of --make-benchmark")
    parser.add_argument("--pairs", type=int, default=20, help="link queries of --make-benchmark")
    parser.add_argument("--dense", default="default", help="dense model of --make-benchmark's index (or none)")
    args = parser.parse_args(argv)

    FIGURES.clear()
    docs = load_docs(args.docs)
    if args.make_benchmark:
        write_wiki_benchmark(args.make_benchmark, docs, args.single, args.pairs, None if args.dense == "none" else args.dense)
        return FIGURES[-1]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        chunks = [{"chunk_id": f"{d['id']}_0", "title": d["title"], "text": d["text"]} for d in docs]
        build_index_from_chunks(chunks, Path(tmp) / "index", "en", Settings(), dense=None, progress=False)
        index = open_index(Path(tmp) / "index")
        emit(part="index", chunks=len(chunks), build_s=round(time.perf_counter() - start, 2))
        bench_overhead(index, args.episodes, args.calls_per_turn)
        episodes = [] if args.no_model else bench_model(index, docs, args.llm, args.questions, args.max_rounds, args.max_turns)
    overhead = [f for f in FIGURES if f["part"] == "overhead"]
    summary = dict(
        part="summary",
        chunks=len(docs),
        harness_ms_per_turn_median=statistics.median(f["harness_ms_per_turn"] for f in overhead),
        search_ms_median=statistics.median(f["search_ms"] for f in overhead),
        turns_per_scripted_episode=overhead[0]["turns"],
        calls_per_turn=args.calls_per_turn,
    )
    if episodes:
        summary.update(
            llm=args.llm,
            max_rounds=args.max_rounds,
            max_turns=args.max_turns,
            episodes=len(episodes),
            episode_wall_s_mean=round(statistics.mean(e["wall_s"] for e in episodes), 2),
            searches_mean=statistics.mean(e["searches"] for e in episodes),
            turns_mean=statistics.mean(e["turns"] for e in episodes),
            recall_mean=statistics.mean(e["recall"] for e in episodes),
            trajectory_recall_mean=statistics.mean(e["trajectory_recall"] for e in episodes),
            finalized_by_model=sum(e["finalized_by"] == "model" for e in episodes),
        )
    emit(**summary)
    return summary


if __name__ == "__main__":
    main()
