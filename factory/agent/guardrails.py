"""The harness's rules, one check per rule, each answering in words the model can act on.

A check raises ``Rejection`` (the action is refused, the episode goes on) or returns
warnings (the action is accepted, the model is told). Gate rules (wrong round, too
few searches, locked searches) answer alone; content rules are collected so the
model can fix every problem of a call at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from factory.agent.state import EpisodeState, normalize_concept, normalize_query
from factory.agent.tools import ChunkReason, FinalizeArgs, SaveArgs, SearchArgs
from factory.settings import AgentLimits


@dataclass
class Rejection(Exception):
    codes: list[str]
    messages: list[str] = field(default_factory=list)

    @classmethod
    def one(cls, code: str, message: str) -> "Rejection":
        return cls([code], [message])

    @property
    def code(self) -> str:
        return ",".join(self.codes)

    @property
    def text(self) -> str:
        return "Error: " + " ".join(self.messages)

    def __str__(self) -> str:
        return self.text


class _Problems:
    def __init__(self) -> None:
        self.codes: list[str] = []
        self.messages: list[str] = []

    def add(self, code: str, message: str) -> None:
        self.codes.append(code)
        self.messages.append(message)

    def raise_any(self) -> None:
        if self.codes:
            raise Rejection(self.codes, self.messages)


# ------------------------------------------------------------------ search
def check_search(
    args: SearchArgs, state: EpisodeState, limits: AgentLimits, *, locked: bool, used: int, budget: int, scope: str
) -> tuple[str, int, list[str]]:
    """The query and result count to run, and warnings; raises Rejection."""
    if locked:
        raise Rejection.one(
            "search_locked",
            f"searches are locked: this round's context holds about {used:,} of {budget:,} tokens "
            f"({limits.search_lock_share:.0%} or more). Call save_and_advance to keep your evidence and "
            "continue in a fresh round" + (", or finalize_ranking." if not state.is_last_round else "; "
                                           "this is the last round, so call finalize_ranking."),
        )
    query = " ".join(args.query.split())
    if not query:
        raise Rejection.one("empty_query", "the query is empty; write a few keywords.")
    key = normalize_query(query)
    asked = state.episode_queries if scope == "episode" else state.round_queries
    if key in asked:
        where = "in this episode" if scope == "episode" else "in this round"
        raise Rejection.one(
            "query_repeated",
            f'the query "{query}" was already searched {where} (case and spacing are ignored); '
            "write a different query: other keywords, a synonym, or a related entity.",
        )
    warnings = []
    top_k = args.top_k if args.top_k is not None else limits.top_k_default
    if top_k < 1 or top_k > limits.top_k_max:
        clamped = min(max(top_k, 1), limits.top_k_max)
        warnings.append(f"top_k must be between 1 and {limits.top_k_max}; {clamped} results were returned.")
        top_k = clamped
    return query, top_k, warnings


# ----------------------------------------------------------- shared rules
def _check_chunks(
    items: list[ChunkReason], state: EpisodeState, context: set[str], limits: AgentLimits, problems: _Problems, what: str
) -> None:
    """Ids must come from the current context: the saved set plus this round's results."""
    ids = [c.chunk_id for c in items]
    never = [c for c in ids if c not in context and c not in state.seen]
    if never:
        problems.add(
            "unknown_chunk",
            f"{what} names chunk id(s) never shown in a search result: {', '.join(never[:5])}. "
            "Use chunk ids exactly as the results print them.",
        )
    earlier = [c for c in ids if c not in context and c in state.seen]
    if earlier:
        problems.add(
            "chunk_not_in_context",
            f"{what} names chunk id(s) not in your current context (the saved evidence and the results shown "
            f"this round before this turn): {', '.join(earlier[:5])}. A chunk from an earlier round that you did "
            "not save must be found again by a search first.",
        )
    short = [c.chunk_id for c in items if len(c.reason.strip()) < limits.min_reason_chars]
    if short:
        problems.add(
            "reason_too_short",
            f"the reason for {', '.join(short[:5])} is shorter than {limits.min_reason_chars} characters; "
            "say in a sentence what each chunk establishes.",
        )


def _check_coverage(covered: list[str], unresolved: list[str], problems: _Problems) -> None:
    cov = {normalize_concept(c) for c in covered if c.strip()}
    unres = {normalize_concept(c) for c in unresolved if c.strip()}
    if not cov and not unres:
        problems.add(
            "coverage_empty",
            "covered_concepts and unresolved_concepts are both empty; list the parts of the question "
            "that the evidence settles and those still open.",
        )
    both = sorted(cov & unres)
    if both:
        problems.add(
            "coverage_overlap",
            f"{', '.join(repr(c) for c in both[:5])} is in both covered_concepts and unresolved_concepts; "
            "put each concept in exactly one list.",
        )


def unresolved_share(covered: list[str], unresolved: list[str]) -> float:
    cov = {normalize_concept(c) for c in covered if c.strip()}
    unres = {normalize_concept(c) for c in unresolved if c.strip()} - cov
    declared = len(cov | unres)
    return len(unres) / declared if declared else 0.0


# -------------------------------------------------------------------- save
def check_save(args: SaveArgs, state: EpisodeState, context: set[str], limits: AgentLimits) -> list[str]:
    """Warnings for an accepted save_and_advance; raises Rejection. ``context``: the
    chunk ids the model could see when it wrote the call."""
    if state.is_last_round:
        raise Rejection.one(
            "save_last_round",
            f"save_and_advance is disabled in the last round (round {state.round_no} of {state.rounds}); "
            "call finalize_ranking with your best ranking.",
        )
    if state.round_searches < limits.min_searches_to_save:
        raise Rejection.one(
            "save_too_few_searches",
            f"save_and_advance needs at least {limits.min_searches_to_save} searches in this round; "
            f"you have made {state.round_searches}. Keep searching with search_corpus.",
        )
    problems = _Problems()
    if len(args.saved_chunks) < limits.min_saved_to_save:
        problems.add(
            "save_nothing_saved",
            f"save_and_advance must save at least {limits.min_saved_to_save} chunk in saved_chunks "
            "(chunk_id and reason).",
        )
    _check_chunks(args.saved_chunks, state, context, limits, problems, "saved_chunks")
    not_saved = [c for c in args.drop_from_saved if c not in state.saved]
    if not_saved:
        problems.add("drop_not_saved", f"drop_from_saved names chunk(s) that are not saved: {', '.join(not_saved[:5])}.")
    both = [c.chunk_id for c in args.saved_chunks if c.chunk_id in set(args.drop_from_saved)]
    if both:
        problems.add(
            "save_drop_overlap",
            f"{', '.join(dict.fromkeys(both[:5]))} is in both saved_chunks and drop_from_saved; keep it (saved_chunks, "
            "which updates its reason) or drop it, not both.",
        )
    _check_coverage(args.covered_concepts, args.unresolved_concepts, problems)
    if len(args.round_summary.strip()) < limits.min_summary_chars:
        problems.add(
            "summary_too_short",
            f"round_summary has {len(args.round_summary.strip())} characters; write at least "
            f"{limits.min_summary_chars}: what you found and what you ruled out.",
        )
    if len(args.next_round_goal.strip()) < limits.min_goal_chars:
        problems.add(
            "goal_too_short",
            f"next_round_goal has {len(args.next_round_goal.strip())} characters; write at least "
            f"{limits.min_goal_chars}: what the next round must find.",
        )
    problems.raise_any()
    kept = (set(state.saved) - set(args.drop_from_saved)) | {c.chunk_id for c in args.saved_chunks}
    if len(kept) > limits.saved_soft_cap:
        return [
            f"{len(kept)} chunks are saved, above the soft cap of {limits.saved_soft_cap}; "
            "drop the weakest with drop_from_saved."
        ]
    return []


# ---------------------------------------------------------------- finalize
def check_finalize(
    args: FinalizeArgs, state: EpisodeState, context: set[str], limits: AgentLimits
) -> tuple[list[ChunkReason], list[str]]:
    """The ranking to keep (deduplicated, cut to final_k) and warnings; raises Rejection."""
    problems = _Problems()
    if not args.ranking:
        problems.add("empty_ranking", "the ranking is empty; list the chunk ids that answer the question, best first.")
    _check_chunks(args.ranking, state, context, limits, problems, "ranking")
    _check_coverage(args.covered_concepts, args.unresolved_concepts, problems)
    share = unresolved_share(args.covered_concepts, args.unresolved_concepts)
    if not state.is_last_round and share >= 0.5:
        problems.add(
            "finalize_unresolved",
            f"{share:.0%} of the declared concepts are unresolved (half or more); keep searching, or call "
            "save_and_advance to continue in a fresh round, before finalizing.",
        )
    problems.raise_any()
    warnings = []
    unique: dict[str, ChunkReason] = {}
    for item in args.ranking:
        unique.setdefault(item.chunk_id, item)
    ranking = list(unique.values())
    if len(ranking) < len(args.ranking):
        warnings.append("duplicate chunk ids in the ranking were kept once.")
    if len(ranking) > limits.final_k:
        warnings.append(f"the ranking had {len(ranking)} chunks; only the first {limits.final_k} were kept.")
        ranking = ranking[: limits.final_k]
    if len(ranking) < limits.min_final_chunks:
        warnings.append(
            f"the ranking has only {len(ranking)} chunk(s) (fewer than {limits.min_final_chunks}); accepted."
        )
    return ranking, warnings
