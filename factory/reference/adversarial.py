"""Drafts the gauntlet must refuse, made from the reference set by script.

* **leaky multi-hop**: an accepted reference draft whose question copies the rarest words
  of a passage it should reach only through hidden things (the answer passage first,
  then another hidden passage; and a rare three-word phrase of the answer passage): what
  a composer does when it pastes the evidence into its question.
* **planted defects**: accepted reference drafts with one defect each: the answer or a
  bridge named (as written, in lower case, a surname alone), a quote that is not in its
  passage, a step dropped, an empty or sentence-long answer, an unknown support id, a
  copied prompt example, and for a calculation a miscomputed answer (its number replaced
  by one the quotes do not give: three times it, plus seven).

Each returns (kind, Draft) pairs; the candidate's own subgraph (its contract) judges them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterator

from factory.contract import figure_names, subgraph_contract
from factory.records import Draft, ReasoningStep
from factory.reference.records import ReferenceCandidate
from factory.validate.tokens import content, tokenize

_TAILS = {
    "en": " It is told together with {words}.",
    "ru": " Об этом рассказывается рядом с тем, что упоминает {words}.",
}
_HEADS = {"en": "With {words} in mind: ", "ru": "Имея в виду {words}: "}
_AND = {"en": " and ", "ru": " и "}


def document_frequency(texts: Any, lang: str) -> Counter[str]:
    """Chunks per lemma (numbers by value), over the corpus's chunk texts."""
    df: Counter[str] = Counter()
    for text in texts:
        df.update({t.lemma for t in content(tokenize(text, lang))})
    return df


def _rarest(text: str, lang: str, df: Counter[str], avoid: set[str], n: int = 3) -> list[str]:
    seen: dict[str, tuple[int, str]] = {}
    for token in content(tokenize(text, lang)):
        if token.lemma in avoid or len(token.fold) < 3 or token.lemma in seen:
            continue
        seen[token.lemma] = (df.get(token.lemma, 0), token.surface)
    return [surface for _, surface in sorted(seen.values())[:n]]


def _rare_phrase(text: str, lang: str, df: Counter[str], avoid: set[str]) -> str:
    tokens = content(tokenize(text, lang))
    best, best_score = "", None
    for i in range(len(tokens) - 2):
        window = tokens[i:i + 3]
        if any(t.lemma in avoid for t in window):
            continue
        score = max(df.get(t.lemma, 0) for t in window)
        if best_score is None or score < best_score:
            best, best_score = text[window[0].start: window[-1].start + len(window[-1].surface)], score
    return best


def _with(draft: Draft, question: str, tag: str) -> Draft:
    return draft.model_copy(update={"question": question, "draft_id": f"{draft.draft_id}-{tag}"})


def leaky_multihop(candidates: list[ReferenceCandidate], accepted: dict[int, int], texts: dict[str, str],
                   df: Counter[str]) -> Iterator[tuple[str, ReferenceCandidate, Draft]]:
    """Each accepted reference draft (``accepted``: candidate index -> the draft the gauntlet
    accepted) with rare words of a hidden passage pasted into its question, so that a
    refusal is the leak's doing: the three rarest words, the next three, the rarest phrase."""
    for cand in candidates:
        if cand.index in accepted and cand.subgraph is not None:
            yield from _leaky(cand, cand.draft(accepted[cand.index]), texts, df)


def _leaky(cand: ReferenceCandidate, draft: Draft, texts: dict[str, str],
           df: Counter[str]) -> Iterator[tuple[str, ReferenceCandidate, Draft]]:
    lang = draft.lang
    contract = subgraph_contract(draft, cand.subgraph, figure_names(cand.subgraph))  # type: ignore[arg-type]
    hidden = list(contract.hidden_passages)
    if contract.answer_passage in hidden:  # the answer passage first
        hidden.remove(contract.answer_passage)
        hidden.insert(0, contract.answer_passage)
    if not hidden:
        return
    avoid = {t.lemma for t in tokenize(draft.question, lang)}
    base = draft.question.rstrip()
    for n, chunk_id in enumerate(hidden[:2]):
        ranked = _rarest(texts.get(chunk_id, ""), lang, df, avoid, n=6)
        for part, words in enumerate((ranked[:3], ranked[3:6])):
            if words:
                joined = ", ".join(words[:-1]) + _AND[lang] + words[-1] if len(words) > 1 else words[0]
                yield "rare_words", cand, _with(draft, base + _TAILS[lang].format(words=joined), f"leak{n}{part}")
                if part == 0:  # the same words up front, where a reader (and a search) meets them first
                    yield "rare_words", cand, _with(draft, _HEADS[lang].format(words=joined) + base, f"leak{n}h")
    phrase = _rare_phrase(texts.get(hidden[0], ""), lang, df, avoid)
    if phrase:
        quoted = f"«{phrase}»" if lang == "ru" else f'"{phrase}"'
        yield "rare_phrase", cand, _with(draft, base + _TAILS[lang].format(words=quoted), "leakp")


def miscomputed(answer: str, lang: str) -> str | None:
    """The answer with its first number replaced by three times it plus seven (units kept)."""
    number = next((t for t in tokenize(answer, lang) if t.number is not None), None)
    if number is None:
        return None
    wrong = float(number.number) * 3 + 7
    text = f"{wrong:g}" if wrong == int(wrong) or lang != "ru" else f"{wrong:g}".replace(".", ",")
    return answer[:number.start] + text + answer[number.start + len(number.surface):]


_ECHO = {"en": "words copied exactly from the passage", "ru": "слова, точно скопированные из отрывка"}
_SENTENCE = {"en": "It was {a} who did it in the end", "ru": "В итоге это был {a}, и никто другой"}


def planted_defects(candidates: list[ReferenceCandidate],
                    accepted: dict[int, int]) -> Iterator[tuple[str, ReferenceCandidate, Draft]]:
    """Each accepted reference draft (``accepted``: candidate index -> the draft the gauntlet
    accepted) with one defect planted, kind by kind."""
    for cand in candidates:
        if cand.index not in accepted or cand.subgraph is None:
            continue
        draft = cand.draft(accepted[cand.index])
        lang = draft.lang
        base = draft.question.rstrip()
        contract = subgraph_contract(draft, cand.subgraph, figure_names(cand.subgraph))
        answer = draft.answer
        yield "answer_named", cand, _with(draft, f"{base} ({answer})", "p-answer")
        yield "answer_lower", cand, _with(draft, f"{base} {answer.lower()}?", "p-lower")
        words = [t.surface for t in content(tokenize(answer, lang)) if t.number is None]
        if draft.cell.answer_type == "person" and len(words) > 1:
            yield "surname_alone", cand, _with(draft, f"{base} {words[-1]}?", "p-surname")
        bridges = [b for b in contract.must_hide if b not in contract.answer_names]
        if bridges:
            yield "bridge_named", cand, _with(draft, f"{base} ({bridges[0]})", "p-bridge")
        if draft.steps:
            first = draft.steps[0]
            broken = re.sub(r"\w{4,}", lambda m: m.group(0)[::-1], first.quote, count=1)
            if broken != first.quote:
                steps = [first.model_copy(update={"quote": broken}), *draft.steps[1:]]
                yield "quote_not_in_passage", cand, draft.model_copy(update={"steps": steps,
                                                                              "draft_id": draft.draft_id + "-p-quote"})
            if len({s.chunk_id for s in draft.steps}) > 1:
                kept = [s for s in draft.steps if s.chunk_id != draft.steps[-1].chunk_id]
                yield "step_dropped", cand, draft.model_copy(update={"steps": kept,
                                                                      "draft_id": draft.draft_id + "-p-step"})
        wrong = miscomputed(answer, lang) if draft.cell.mechanic == "calculation" else None
        if wrong is not None:
            yield "answer_miscomputed", cand, draft.model_copy(update={
                "answer": wrong, "answer_aliases": [], "draft_id": draft.draft_id + "-p-number"})
        yield "empty_answer", cand, draft.model_copy(update={"answer": "", "draft_id": draft.draft_id + "-p-empty"})
        yield "sentence_answer", cand, draft.model_copy(update={
            "answer": _SENTENCE[lang].format(a=answer) + ".", "draft_id": draft.draft_id + "-p-sentence"})
        yield "unknown_chunk", cand, draft.model_copy(update={
            "support_chunk_ids": [*draft.support_chunk_ids, "no-such-chunk_0"], "draft_id": draft.draft_id + "-p-id"})
        yield "prompt_echo", cand, draft.model_copy(update={
            "steps": [ReasoningStep(chunk_id=s.chunk_id, quote=_ECHO[lang], finding=s.finding) for s in draft.steps],
            "draft_id": draft.draft_id + "-p-echo"})
