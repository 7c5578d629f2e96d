"""Render the agent's prompt files (one folder per language) into messages.

A round's context is a pure function of (language, limits, protocol, RoundState,
question), which is what lets a trainer replay any round from the stored state.
"""

from __future__ import annotations

from factory.agent.state import RoundState
from factory.agent.tools import cut, describe_tools, snippet_chars
from factory.llm.types import Message
from factory.prompts import AGENT
from factory.settings import AgentLimits


def system_prompt(lang: str, limits: AgentLimits, protocol: str) -> str:
    if protocol == "json":
        block = AGENT.render(lang, "protocol_json.md", tools=describe_tools(limits))
    else:
        block = AGENT.text(lang, "protocol_tools.md")
    return AGENT.render(
        lang, "system.md",
        rounds=limits.rounds,
        min_searches=limits.min_searches_to_save,
        min_saved=limits.min_saved_to_save,
        min_reason=limits.min_reason_chars,
        min_summary=limits.min_summary_chars,
        min_goal=limits.min_goal_chars,
        final_k=limits.final_k,
        soft_cap=limits.saved_soft_cap,
        protocol=block.strip(),
    ).strip()


def round_prompt(lang: str, limits: AgentLimits, question: str, state: RoundState) -> str:
    words = AGENT.phrases(lang)
    if state.saved:
        # in full up to the snippet cap: saved chunks are left out of results, so this is where they are reread
        cap = snippet_chars(limits)
        saved = "\n".join(
            f"- {s.chunk_id}: {s.reason}" + (f"\n  \u201c{cut(s.text, cap)}\u201d" if s.text else "")
            for s in state.saved
        )
    else:
        saved = words["none"]
    return AGENT.render(
        lang, "round.md",
        question=question,
        round_no=state.round_no,
        rounds=state.rounds,
        last_round=words["last_round"] if state.is_last else "",
        saved=saved,
        covered="; ".join(state.covered) or words["none"],
        unresolved="; ".join(state.unresolved) or words["none"],
        summary=state.summary or words["first_summary"],
        goal=state.goal or words["first_goal"],
        note=f"\n\n{words['note']}{state.note}" if state.note else "",
    ).strip()


def round_messages(lang: str, limits: AgentLimits, protocol: str, question: str, state: RoundState) -> list[Message]:
    """The fresh context a round starts with."""
    return [
        Message(role="system", content=system_prompt(lang, limits, protocol)),
        Message(role="user", content=round_prompt(lang, limits, question, state)),
    ]
