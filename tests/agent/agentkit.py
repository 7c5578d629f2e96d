"""Helpers for the agent tests: a tiny keyword searcher over the fixture corpus and
a scripted model that plays either protocol."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from factory.llm.fake import FakeLLM
from factory.llm.types import LLMRequest, LLMResponse, ToolCall
from factory.records import Hit
from factory.settings import AgentLimits, Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


class KeywordSearcher:
    """Scores a chunk by how often the query's words occur in it; ties by id."""

    name = "keyword"

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.words = {cid: Counter(re.findall(r"\w+", t.lower())) for cid, t in texts.items()}
        self.calls = 0

    def search(self, query: str, k: int = 10) -> list[Hit]:
        self.calls += 1
        terms = set(re.findall(r"\w+", query.lower()))
        scored = [(sum(words[t] for t in terms), cid) for cid, words in self.words.items()]
        scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:k]
        return [Hit(chunk_id=cid, score=float(s), rank=i, snippet=self.texts[cid][:200]) for i, (s, cid) in enumerate(scored, 1)]

    def search_many(self, queries, k: int = 10):
        return [self.search(q, k) for q in queries]


def load_fixture(lang: str = "en") -> dict[str, str]:
    texts = {}
    with open(FIXTURES / f"corpus_{lang}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            texts[f"{doc['id']}_0"] = f"{doc['title']}. {doc['text']}"
    return texts


def json_turn(*actions: dict[str, Any]) -> LLMResponse:
    """One JSON-protocol reply holding several actions."""
    return LLMResponse(text=json.dumps({"actions": list(actions)}))


def tools_turn(*actions: dict[str, Any]) -> LLMResponse:
    """One tools-protocol reply holding several tool calls (ids c0, c1, ...)."""
    return LLMResponse(tool_calls=[ToolCall(id=f"c{i}", name=a["tool"], arguments=json.dumps(a["arguments"]))
                                   for i, a in enumerate(actions)])


def several(protocol: str, *actions: dict[str, Any]) -> LLMResponse:
    return json_turn(*actions) if protocol == "json" else tools_turn(*actions)


def act(protocol: str, name: str, **arguments: Any) -> dict[str, Any]:
    """One scripted action in the shape each protocol's fake reply takes."""
    if protocol == "tools":
        return {"tool": name, "arguments": arguments}
    return {"action": name, "arguments": arguments}


def search(protocol: str, query: str, **extra: Any) -> dict[str, Any]:
    return act(protocol, "search_corpus", query=query, **extra)


REASON = "it states the fact the question turns on"
SUMMARY = "Found the town and its founding story; the river and the flood remain to be checked."
GOAL = "Find the passage about the flood that destroyed the bridge."


def save(protocol: str, chunks: list[str], **over: Any) -> dict[str, Any]:
    arguments = dict(
        saved_chunks=[{"chunk_id": c, "reason": REASON} for c in chunks],
        drop_from_saved=[],
        covered_concepts=["town"],
        unresolved_concepts=["flood"],
        round_summary=SUMMARY,
        next_round_goal=GOAL,
    )
    arguments.update(over)
    return act(protocol, "save_and_advance", **arguments)


def finalize(protocol: str, chunks: list[str], **over: Any) -> dict[str, Any]:
    arguments = dict(
        ranking=[{"chunk_id": c, "reason": REASON} for c in chunks],
        covered_concepts=["town", "flood"],
        unresolved_concepts=[],
    )
    arguments.update(over)
    return act(protocol, "finalize_ranking", **arguments)


FIVE_QUERIES = ["Vellmoor", "River Ashkel", "Ironworks", "Edmund Carrow", "Dunmere"]


def make_llm(
    protocol: str, script: list[Any], *, context_tokens: int = 131_072, default: Any = "I am thinking.", **kwargs: Any
) -> FakeLLM:
    llm = FakeLLM(script=script, default=default, context_tokens=context_tokens, **kwargs)
    llm.supports_tools = protocol == "tools"
    return llm


def settings_with(**agent: Any) -> Settings:
    """Settings whose agent limits (standard profile) are overridden by ``agent``."""
    limits = {k: v for k, v in agent.items() if k in AgentLimits.model_fields}
    top = {k: v for k, v in agent.items() if k not in AgentLimits.model_fields}
    return Settings(agent={"profile": "standard", "standard": limits, **top})


class SilentTokens:
    """An LLM whose backend reports no token counts (the harness must estimate)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.model, self.context_tokens = inner.name, inner.model, inner.context_tokens
        self.supports_tools = getattr(inner, "supports_tools", False)

    def complete(self, request: LLMRequest) -> Any:
        response = self.inner.complete(request)
        response.tokens_in = response.tokens_out = 0
        return response


class RolloutPolicy:
    """Replies by rollout (the request's sample_index), each from its own script."""

    def __init__(self, scripts: dict[int, list[Any]], default: Any = "nothing to add") -> None:
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.default = default
        self.lock = threading.Lock()

    def __call__(self, request: LLMRequest) -> Any:
        with self.lock:
            script = self.scripts.get(request.sample_index, [])
            return script.pop(0) if script else self.default
