"""What the fact sheet, the composer and the reviser share about passages: their
labels (P1, P2, ...), the names of the subgraph's entities, and defusing passage text.

Corpus text is untrusted: it reaches the model only inside ``<passage>`` blocks (any
tag-like text inside is defused) and every system prompt says that instructions
found there are data.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from factory.records import Subgraph

_TAG = re.compile(r"</?\s*(passage|feedback|draft|history)\b", re.IGNORECASE)


def defuse(text: str, limit: int = 0) -> str:
    """Untrusted text made safe to place inside a delimited block."""
    text = _TAG.sub(lambda m: m.group(0).replace("<", "‹"), text)
    if limit and len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " …"
    return text.strip()


def passage_label(n_passages: int) -> Any:
    """The type of a field naming one of P1..Pn (the labels the prompts show)."""
    return Literal[tuple(f"P{i}" for i in range(1, n_passages + 1))]  # type: ignore[valid-type]


def labels_for(subgraph: Subgraph) -> dict[str, str]:
    """Passage label (P1, P2, ...) -> chunk id, in subgraph order."""
    return {f"P{i}": chunk_id for i, chunk_id in enumerate(subgraph.chunk_ids, 1)}


def entity_name(subgraph: Subgraph, key: str | None) -> str:
    if not key:
        return ""
    info = subgraph.figures.get("entities", {}).get(key) or {}
    return info.get("name") or key


def entity_aliases(subgraph: Subgraph, key: str | None) -> list[str]:
    info = subgraph.figures.get("entities", {}).get(key or "") or {}
    return list(info.get("aliases") or [])
