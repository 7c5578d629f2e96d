"""The validator protocol and what validators may look at.

A validator implements one method, ``check(draft, ctx) -> Verdict``. Everything it may
need lives in the ``ValidationContext``: the chunk texts, the searchers of the fixed
index, the LLM (normally the cached, logged gateway), a lexicon of common words, the
subgraph the draft was composed from, and the settings. A validator never raises for
bad model output: a failed call or parse becomes the verdict.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from factory.index.base import Searcher
from factory.llm.types import LLMRequest, LLMResponse
from factory.records import Draft, Subgraph, Verdict
from factory.settings import ValidateSettings
from factory.validate.tokens import Lexicon


@runtime_checkable
class Validator(Protocol):
    name: str

    def check(self, draft: Draft, ctx: "ValidationContext") -> Verdict: ...


class ChunkSource(Protocol):
    """Chunk texts by id (the store, a fixed index, or a dict in tests)."""

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]: ...

    def titles(self, chunk_ids: Sequence[str]) -> dict[str, str]: ...


class DictChunks:
    def __init__(self, texts: Mapping[str, str], titles: Mapping[str, str] | None = None) -> None:
        self._texts = dict(texts)
        self._titles = dict(titles or {})

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        return {c: self._texts[c] for c in chunk_ids if c in self._texts}

    def titles(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        return {c: self._titles.get(c, "") for c in chunk_ids if c in self._texts}

    def all_texts(self) -> list[str]:
        return list(self._texts.values())


class StoreChunks:
    """Chunk texts from the store's ``chunks`` view, cached (chunks do not change during a run)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._cache: dict[str, tuple[str, str] | None] = {}

    def _load(self, chunk_ids: Sequence[str]) -> None:
        missing = [c for c in dict.fromkeys(chunk_ids) if c not in self._cache]
        if not missing:
            return
        rows = self.store.query(
            "SELECT chunk_id, title, text FROM chunks WHERE chunk_id IN (SELECT unnest(?::VARCHAR[]))", [missing]
        )
        found = {r["chunk_id"]: (r["text"] or "", r["title"] or "") for r in rows}
        for chunk_id in missing:
            self._cache[chunk_id] = found.get(chunk_id)

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        self._load(chunk_ids)
        return {c: self._cache[c][0] for c in chunk_ids if self._cache.get(c)}

    def titles(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        self._load(chunk_ids)
        return {c: self._cache[c][1] for c in chunk_ids if self._cache.get(c)}

    def all_texts(self, limit: int = 50_000) -> list[str]:
        rows = self.store.query("SELECT text FROM chunks ORDER BY chunk_id LIMIT ?", [limit])
        return [r["text"] or "" for r in rows]


class IndexChunks:
    """Chunk texts from a fixed index (memory-mapped, no query), the store for any other id.

    A run's index holds the texts of the store's current chunks of its language (opening
    it checks their fingerprint), so this answers as ``StoreChunks`` does, without a DuckDB
    connection per candidate. Ids the index lacks (another language's, or none at all) go
    to the store, as do the lexicon's texts."""

    def __init__(self, index: Any, store: StoreChunks) -> None:
        self.index = index
        self.store = store

    def _split(self, chunk_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        inside = [c for c in chunk_ids if c in self.index]
        return inside, [c for c in chunk_ids if c not in self.index]

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        inside, outside = self._split(chunk_ids)
        found = {c: self.index.text(c) or "" for c in inside} | (self.store.texts(outside) if outside else {})
        return {c: found[c] for c in chunk_ids if c in found}

    def titles(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        inside, outside = self._split(chunk_ids)
        found = {c: self.index.title(c) or "" for c in inside} | (self.store.titles(outside) if outside else {})
        return {c: found[c] for c in chunk_ids if c in found}

    def all_texts(self, limit: int = 50_000) -> list[str]:
        return self.store.all_texts(limit)


def store_entity_names(store: Any) -> Callable[[str], list[str]]:
    """Resolve an entity key to its name and aliases from the store (empty when unknown).

    A key the identity step linked to another entity («путин» to «владимир путин»)
    resolves to that entity's names: every surface form counted under it, inflected and
    short ones included, so a leak of any of them is caught."""
    cache: dict[str, list[str]] = {}

    def names(key: str) -> list[str]:
        if key not in cache:
            try:
                rows = store.query(
                    "SELECT name, aliases FROM entities WHERE entity_key = ? ORDER BY generation DESC LIMIT 1", [key]
                ) or store.query(
                    "SELECT e.name, e.aliases FROM current_entity_links l JOIN current_entities e "
                    "ON e.entity_key = l.identity AND e.lang = l.lang "
                    "WHERE l.entity_key = ? AND l.doc_id IS NULL ORDER BY e.doc_freq DESC LIMIT 1", [key]
                )
            except Exception:  # the entity layer may be absent in a bare store
                rows = []
            cache[key] = [rows[0]["name"], *(rows[0]["aliases"] or [])] if rows else []
        return cache[key]

    return names


@dataclass
class ValidationContext:
    settings: ValidateSettings
    chunks: ChunkSource
    searchers: dict[str, Searcher] = field(default_factory=dict)
    llm: Any = None  # an LLM, or the gateway (complete/complete_many with stage and item ids)
    lexicon: Lexicon | None = None
    entity_names: Callable[[str], list[str]] | None = None
    subgraph: Subgraph | None = None
    difficulty: Any = None  # factory.agent.difficulty.DifficultyChecker when the agent run is on
    known_chunk_ids: Callable[[Sequence[str]], set[str]] | None = None
    item_id: str = ""
    # (question, support, answer) -> the duplicate among the tasks known when the candidate was drawn, or None
    duplicate_of: Callable[[str, Sequence[str], str], Any] | None = None

    def for_item(self, item_id: str, subgraph: Subgraph | None = None) -> "ValidationContext":
        """A copy for one candidate (shares caches and clients)."""
        return dataclasses.replace(self, item_id=item_id, subgraph=subgraph)

    def existing(self, chunk_ids: Sequence[str]) -> set[str]:
        if self.known_chunk_ids is not None:
            return self.known_chunk_ids(chunk_ids)
        return set(self.chunks.texts(chunk_ids))

    def resolve_names(self, values: Sequence[str]) -> list[str]:
        """Entity keys become their names and aliases; plain names stay as they are."""
        described = (self.subgraph.figures.get("entities") or {}) if self.subgraph else {}
        out: list[str] = []
        for value in values:
            info = described.get(value) if isinstance(described, dict) else None
            if isinstance(info, dict) and info.get("name"):
                names = [info["name"], *(info.get("aliases") or [])]
            else:
                names = self.entity_names(value) if self.entity_names else []
            out.extend(names or [value])
        return [n for n in dict.fromkeys(out) if n and n.strip()]

    def get_lexicon(self) -> Lexicon:
        if self.lexicon is None:
            source = getattr(self.chunks, "all_texts", None)
            self.lexicon = Lexicon.from_texts(source() if source else [])
        return self.lexicon

    def min_support(self, mechanic: str) -> int:
        return 1 if mechanic in self.settings.single_hop_mechanics else self.settings.min_support

    def ask(self, requests: list[LLMRequest], stage: str) -> list[LLMResponse]:
        """Ask the LLM; through the gateway (cache, log) when that is what we hold."""
        if not requests:
            return []
        if self.llm is None:
            return [LLMResponse(error="no LLM configured") for _ in requests]
        try:
            if hasattr(self.llm, "complete_many"):
                return list(self.llm.complete_many(requests, stage=stage, item_ids=[self.item_id] * len(requests)))
            return [self.llm.complete(r) for r in requests]
        except Exception as exc:  # a backend that raises instead of returning an error
            return [LLMResponse(error=f"{type(exc).__name__}: {exc}") for _ in requests]


def verdict(name: str, ok: bool, reason: str = "", feedback: str = "", **figures: Any) -> Verdict:
    return Verdict(ok=ok, validator=name, reason=reason, feedback=feedback, figures=figures)


def skipped(name: str, reason: str, feedback: str = "") -> Verdict:
    """Did not run: never counted as a pass (ok is False), never blocks a task (hard is False)."""
    return Verdict(ok=False, validator=name, reason=reason, feedback=feedback, hard=False, skipped=True)


def timed_check(validator: Validator, draft: Draft, ctx: ValidationContext) -> Verdict:
    """Run one validator, turning an unexpected exception into a failed verdict."""
    start = time.perf_counter()
    try:
        result = validator.check(draft, ctx)
    except Exception as exc:  # a bug must not kill a run; it shows up in the funnel
        result = Verdict(
            ok=False,
            validator=validator.name,
            reason="validator_error",
            feedback="",
            figures={"error": f"{type(exc).__name__}: {exc}"},
        )
    result.elapsed_s = time.perf_counter() - start
    return result
