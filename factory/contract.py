"""What a question may name and what it must hide: one contract for the selectors, the
composer's instructions, the feedback and every validator.

A question hops from a named thing to unnamed ones and onward. The subgraph's mechanic
fixes which is which:

* **may name** - the seed: the subgraph's constraint entities (a chain's, a temporal
  chain's or a calculation's start, an intersection's clues, a comparison's group);
* **must hide** - the answer and the bridges (a chain's intermediate entities, a
  comparison's candidates), in any form;
* **seed passages** - support passages that mention a seed entity (or are its article):
  a solver reaches them by searching for what the question names, so a broad query
  that finds them is no shortcut;
* **hidden passages** - every other support passage: reached only through hidden
  entities. A broad query that finds the answer passage, or most hidden passages, or
  every support passage at once, hands over what the question hides.

Tasks the factory did not write (``factory audit``) carry no roles. There a support
passage is a seed passage when the question names its title or one of the entities it
mentions, and every other passage is hidden (``audit_contract``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from factory.records import Draft, Subgraph

# roles whose passages are reached from the seed, for subgraphs stored before seed_chunk_ids
SEED_ROLES = frozenset({"start", "constraint", "member"})


@dataclass(frozen=True)
class Contract:
    may_name: tuple[str, ...]  # names (and aliases) of the seed entities
    must_hide: tuple[str, ...]  # names (and aliases) of the answer and the bridges
    answer_names: tuple[str, ...]  # the answer and its aliases (a subset of must_hide)
    seed_passages: tuple[str, ...]
    hidden_passages: tuple[str, ...]
    answer_passage: str | None

    @property
    def support(self) -> tuple[str, ...]:
        return self.seed_passages + self.hidden_passages

    def answer_is_hidden(self) -> bool:
        return self.answer_passage is not None and self.answer_passage in self.hidden_passages


Names = Callable[[Sequence[str]], list[str]]  # entity keys -> names and aliases (ValidationContext.resolve_names)


def figure_names(subgraph: Subgraph) -> Names:
    """Entity keys -> the names and aliases the selector recorded for them (the key itself
    when it recorded none)."""
    described = subgraph.figures.get("entities") or {}

    def names(keys: Sequence[str]) -> list[str]:
        out: list[str] = []
        for key in keys:
            info = described.get(key) if isinstance(described, dict) else None
            out.extend([info["name"], *(info.get("aliases") or [])] if isinstance(info, dict) and info.get("name")
                       else [key])
        return out

    return names


def seed_chunks(subgraph: Subgraph) -> set[str]:
    """The subgraph's seed passages (by role for subgraphs stored before the contract)."""
    if subgraph.seed_chunk_ids is not None:
        return set(subgraph.seed_chunk_ids)
    return {c for c, role in subgraph.roles.items() if role in SEED_ROLES}


def subgraph_contract(draft: Draft, subgraph: Subgraph, names: Names) -> Contract:
    """The contract of a draft composed from ``subgraph`` (its support may have been pruned)."""
    support = list(dict.fromkeys(draft.support_chunk_ids))
    seeds = seed_chunks(subgraph)
    answer = [draft.answer, *draft.answer_aliases]
    if subgraph.answer_entity:
        answer += names([subgraph.answer_entity])
    hidden = list(answer) + list(draft.bridge_entities) + names(subgraph.bridge_entities)
    return Contract(
        may_name=tuple(_clean(names(subgraph.constraint_entities))),
        must_hide=tuple(_clean(hidden)),
        answer_names=tuple(_clean(answer)),
        seed_passages=tuple(c for c in support if c in seeds),
        hidden_passages=tuple(c for c in support if c not in seeds),
        answer_passage=draft.answer_chunk_id,
    )


def audit_contract(draft: Draft, named: Callable[[str], bool]) -> Contract:
    """The contract of a task without roles: ``named(chunk_id)`` says whether the question
    names the passage's title or an entity it mentions (the caller decides with the
    leakage matcher)."""
    support = list(dict.fromkeys(draft.support_chunk_ids))
    seeds = [c for c in support if named(c)]
    answer = _clean([draft.answer, *draft.answer_aliases])
    return Contract(
        may_name=(),
        must_hide=tuple(_clean(answer + list(draft.bridge_entities))),
        answer_names=tuple(answer),
        seed_passages=tuple(seeds),
        hidden_passages=tuple(c for c in support if c not in seeds),
        answer_passage=draft.answer_chunk_id,
    )


def _clean(values: Iterable[str]) -> list[str]:
    return [v for v in dict.fromkeys(v.strip() for v in values if v) if v]
