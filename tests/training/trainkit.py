"""Helpers for the training tests: the fixture corpus as store chunks, hand-made accepted
tasks over it, and a scripted teacher that plays the agent's protocol from the request."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from factory.llm.fake import FakeLLM
from factory.llm.types import LLMRequest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_chunks(lang: str = "en") -> list[dict[str, Any]]:
    rows = []
    with open(FIXTURES / f"corpus_{lang}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            rows.append({
                "chunk_id": f"{doc['id']}_0", "doc_id": doc["id"], "n": 0, "lang": lang, "title": doc["title"],
                "text": doc["text"], "content_hash": hashlib.sha256(doc["text"].encode()).hexdigest()[:16],
                "n_tokens": len(doc["text"].split()), "char_start": 0, "char_end": len(doc["text"]),
            })
    return rows


def put_chunks(store: Any, lang: str = "en") -> None:
    store.append("chunks", fixture_chunks(lang))


def task(task_id: str, question: str, support: list[str], *, mechanic: str = "chain", lang: str = "en",
         run_id: str = "gen-en-s13", answer: str = "x", difficulty: dict | None = None) -> dict[str, Any]:
    return {
        "task_id": task_id, "run_id": run_id, "candidate_id": task_id, "draft_id": f"{task_id}/1", "lang": lang,
        "cell": f"{mechanic}/question/entity", "mechanic": mechanic, "form": "question", "answer_type": "entity",
        "question": question, "answer": answer, "answer_aliases": [], "support_chunk_ids": support,
        "answer_chunk_id": support[-1], "bridge_entities": [], "revisions": 0, "validators": ["schema"],
        "skipped_validators": [], "difficulty": difficulty or {},
    }


# questions about the fixture corpus; pairs marked "twin" share a support set or near-duplicate a question
EN_TASKS = [
    task("t01", "In which year was the company founded by the man who opened the ironworks on the river?",
         ["en_person_007_0", "en_org_avi_0"]),
    task("t02", "What flood destroyed the first bridge whose iron spans came from the town's works?",
         ["en_event_flood_1891_0", "en_bridge_carrow_0"], mechanic="bridge"),
    task("t03", "Which novelist born in the market town wrote a book about a fishing family by the lake?",
         ["en_person_oswick_0", "en_work_glass_orchard_0"], mechanic="bridge"),
    task("t04", "Which chess master was born in the lakeside town where the summer tournament is held?",
         ["en_person_pretch_0", "en_event_tessaly_open_0"], mechanic="comparison"),
    task("t05", "Who mapped the source of the river that flows into the lake with the largest island?",
         ["en_person_vantongeren_0", "en_river_ashkel_0"], mechanic="chain"),
    task("t06", "Which choir was founded by the composer born in the town on the left bank of the river?",
         ["en_org_choral_union_0", "en_person_lind_0"], mechanic="comparison"),
    task("t07", "How long is the river that flows out of the lake to the seaport with the college?",
         ["en_river_greyl_0", "en_place_port_sallow_0"], mechanic="chain"),
    task("t08", "What is the height of the highest peak of the hills where the river rises?",
         ["en_mount_orrin_0", "en_river_ashkel_0"], mechanic="bridge"),
    # t09 shares t01's support set; t10 near-duplicates t02's question
    task("t09", "When was the iron company started whose founder was born in 1801?",
         ["en_org_avi_0", "en_person_007_0"]),
    task("t10", "What flood destroyed the first bridge whose iron spans came from the town works?",
         ["en_event_flood_1891_0", "en_place_001_0"], mechanic="bridge"),
]


def put_tasks(store: Any, rows: list[dict[str, Any]]) -> None:
    store.append("tasks", rows)


# ------------------------------------------------------------------ scripted teacher
REASON = "it states a fact the question depends on"
SUMMARY = "Searched the question's clues; kept the passages that name the entities the question describes."
GOAL = "Find the remaining passage that settles the last hop of the question."
STOP = {"which", "what", "when", "where", "whose", "with", "from", "that", "the", "was", "who", "how", "born",
        "in", "of", "by", "a", "on", "to", "is", "and", "year", "town", "about"}


def _queries(question: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z]+", question.lower()) if w not in STOP and len(w) > 2]
    queries = list(dict.fromkeys(words))
    queries += [f"{a} {b}" for a, b in zip(words, words[1:])]
    return list(dict.fromkeys(queries))


class TeacherPolicy:
    """Answers each request from what it holds, as a deterministic teacher would.

    Round 1: a premature save (refused: too few searches), a prose turn (no tool call),
    five searches, then save_and_advance (or, for about a third of the questions,
    finalize_ranking at once). Later rounds: one search, then finalize_ranking.
    """

    def __init__(self, protocol: str = "json") -> None:
        self.protocol = protocol

    def act(self, name: str, **arguments: Any) -> dict[str, Any]:
        if self.protocol == "tools":
            return {"tool": name, "arguments": arguments}
        return {"action": name, "arguments": arguments}

    def __call__(self, request: LLMRequest) -> Any:
        prompt = request.messages[1].content or ""
        question = re.search(r"Question: (.*)", prompt).group(1)
        round_no = int(re.search(r"Round (\d+) of (\d+)", prompt).group(1))
        turn = sum(1 for m in request.messages if m.role == "assistant")
        said = "\n".join(m.content or "" for m in request.messages[2:] if m.role in ("user", "tool"))
        seen = list(dict.fromkeys(re.findall(r"chunk_id: (\S+)", said)))
        saved = re.findall(r"^- (\S+): ", prompt, re.M)
        early = int(hashlib.sha256(question.encode()).hexdigest(), 16) % 3 == 0
        queries = _queries(question)
        if round_no == 1:
            if turn == 0:
                return self.act("save_and_advance", saved_chunks=[], covered_concepts=["x"], unresolved_concepts=["y"],
                                round_summary=SUMMARY, next_round_goal=GOAL)
            if turn == 1:
                return "Let me think about which clue to search first."
            if turn < 7:
                return self.act("search_corpus", query=queries[(turn - 2) % len(queries)] + ("" if turn - 2 < len(queries) else f" {turn}"))
            keep = [{"chunk_id": c, "reason": REASON} for c in seen[:2]]
            if early:
                return self.act("finalize_ranking", ranking=[{"chunk_id": c, "reason": REASON} for c in seen[:5]],
                                covered_concepts=["entity", "fact"], unresolved_concepts=[])
            return self.act("save_and_advance", saved_chunks=keep, covered_concepts=["first hop"],
                            unresolved_concepts=["second hop"], round_summary=SUMMARY, next_round_goal=GOAL)
        if turn == 0:
            return self.act("search_corpus", query=f"{queries[-1]} round {round_no}")
        ranking = list(dict.fromkeys(saved + seen))[:5]
        return self.act("finalize_ranking", ranking=[{"chunk_id": c, "reason": REASON} for c in ranking],
                        covered_concepts=["first hop", "second hop"], unresolved_concepts=[])


def teacher_llm(protocol: str = "json") -> FakeLLM:
    llm = FakeLLM(default=TeacherPolicy(protocol), context_tokens=131_072, model="scripted-teacher")
    llm.supports_tools = protocol == "tools"
    return llm
