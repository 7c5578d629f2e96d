"""A scripted model world for the generation-loop tests (FakeLLM with a callable reply).

It plays every role the loop asks of a model, by the request's output schema:
fact extraction, composer, reviser, closed-book guesser and evidence reader. A
``Plan`` says how the composer behaves: write a clean question, leak the answer first
and fix it on revision, leak forever, repeat one question for every candidate, or cite
a chunk the reader does not need.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field

import yaml

from factory.llm.fake import FakeLLM
from factory.llm.types import LLMRequest
from factory.prompts import COMPOSER

SYLLABLES = ["zor", "quin", "blat", "vex", "mird", "tolp", "snar", "gleb", "prux", "wend", "yolt", "fask"]


def nonsense(seed: str, words: int = 6) -> list[str]:
    """Words no corpus holds, so the question is nobody's search shortcut."""
    digest = hashlib.sha256(seed.encode()).digest()
    return ["".join(SYLLABLES[b % len(SYLLABLES)] for b in digest[i * 2 : i * 2 + 2]) for i in range(words)]


@dataclass
class Plan:
    compose: str = "clean"  # clean | leak | same
    revise: str = "clean"   # clean | leak
    reader_skips_first: bool = False  # the reader never needs the first support chunk (decorative)
    knows_first_answer: bool = False  # the closed-book guesser knows the answer of the first draft it saw composed
    declines_first: bool = False  # the composer finds no honest question on the first subgraph it is given
    crash_after_calls: int | None = None  # raise Crash on this call (a killed process)


def world_settings():
    """Settings for loop tests in this world, two validators set apart, on purpose.

    Its questions are words no corpus holds: on a 40-chunk fixture index a top-10 search
    returns a quarter of the corpus, so any question built from the passages' words would
    fail the shortcut check. Groundedness (tested in tests/validate) is therefore off here,
    and so is the agent run (its prompts are not scripted in this world). Product runs
    never change validators (the demo profile may not).
    """
    from factory.settings import Settings

    settings = Settings()
    settings.validation = settings.validation.model_copy(update={"question_min_grounded": 0, "agent_run": False})
    return settings


class Crash(BaseException):
    """Not an Exception: nothing in the loop may swallow it (like SIGKILL, it ends the run)."""


@dataclass
class World:
    plan: Plan = field(default_factory=Plan)
    lang: str = "en"
    # question -> [(answer, the fact sentences it needs)]; several candidates may share a question
    answers: dict[str, list[tuple[str, frozenset[str]]]] = field(default_factory=dict)
    calls: int = 0
    first_answer: str | None = None  # the answer of the first draft composed (knows_first_answer)
    declined: list[str] = field(default_factory=list)  # the answers of the subgraphs declined (declines_first)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def llm(self) -> FakeLLM:
        return FakeLLM(default=self)

    def __call__(self, request: LLMRequest):
        with self._lock:
            self.calls += 1
            if self.plan.crash_after_calls is not None and self.calls > self.plan.crash_after_calls:
                raise Crash(f"killed at call {self.calls}")
        name = request.schema_name or ""
        prompt = request.messages[-1].content or ""
        if name.startswith("Facts"):
            return self.facts(prompt)
        if name.startswith("DraftOut"):
            return self.draft(prompt, request)
        if name == "ClosedBookAnswer":
            question = re.search(r"(?:Question|Вопрос): (.*)", prompt).group(1).strip()
            with self._lock:
                known = [a for a, _ in self.answers.get(question, [])]
                first = self.first_answer
            if self.plan.knows_first_answer and first in known:
                return {"answer": first}
            return {"answer": "I do not know"}
        if name == "EvidenceAnswer":
            return self.read(prompt)
        if name == "JudgeAnswer":
            return {"same": False}
        raise AssertionError(f"unexpected request {name!r}")

    @staticmethod
    def facts(prompt: str) -> dict:
        facts = []
        for label, text in re.findall(r'<passage id="(P\d+)">\n(.*?)\n</passage>', prompt, re.DOTALL):
            sentence = re.split(r"(?<=[.!?])\s", text.strip())[0]
            facts.append({"passage": label, "statement": sentence, "paraphrase": f"In other words: {sentence}"})
        return {"facts": facts}

    def draft(self, prompt: str, request: LLMRequest) -> dict:
        say = COMPOSER.phrases(self.lang)
        pattern = re.escape(say["answer"]).replace(re.escape("{name}"), "(.+)")
        found = re.search(pattern, prompt)
        answer = found.group(1).strip() if found else "Nobody"
        revising = "<history>" in prompt
        with self._lock:
            decline = self.plan.declines_first and not revising and not self.declined
            if decline:
                self.declined.append(answer)
        if decline:
            return {"no_honest_question": "The two passages meet only by a coincidence of names; nothing links them."}
        mode = self.plan.revise if revising else self.plan.compose
        facts = re.findall(r"^\[(P\d+)\] ", prompt, re.MULTILINE)
        seed = prompt if mode != "same" else "same"
        words = nonsense(seed + str(request.sample_index))
        if mode == "leak":
            question = f"{words[0].title()} {words[1]} {answer} {words[2]} {words[3]}?"
        else:
            question = f"{words[0].title()} {words[1]} {words[2]} {words[3]} {words[4]} {words[5]}?"
        passages = self._passages(prompt, facts)
        needs = passages[1:] if self.plan.reader_skips_first and len(passages) > 1 else passages
        with self._lock:
            self.answers.setdefault(question, []).append((answer, frozenset(needs)))
            if self.first_answer is None:
                self.first_answer = answer
        texts = dict(re.findall(r'<passage id="(P\d+)">\n(.*?)\n</passage>', prompt, re.DOTALL))
        labels = sorted(texts, key=lambda p: int(p[1:])) or ["P1"]
        steps = [{"passage": p, "quote": texts.get(p, "x").split(".")[0][:200] or "x", "finding": f"step {i}"}
                 for i, p in enumerate(labels)]
        return {"steps": steps, "answer": answer, "answer_aliases": [], "answer_passage": labels[-1],
                "question": question}

    def _passages(self, prompt: str, labels: list[str]) -> list[str]:
        # the composer sees labels, the reader sees chunk ids: the facts carry the chunk text, and the
        # reader matches on it, so remember each fact's sentence
        return [s for s in re.findall(r"^\[P\d+\] In other words: (.*)$", prompt, re.MULTILINE)]

    def read(self, prompt: str) -> dict:
        question = re.search(r"(?:Question|Вопрос): (.*)", prompt).group(1).strip()
        with self._lock:
            entries = list(self.answers.get(question, []))
        answer = next((a for a, needs in entries if all(sentence in prompt for sentence in needs)), "unknown")
        return {"reasoning": "read the passages", "answer": answer, "other_answers": []}


def chain_only_taxonomy(src, dst) -> None:
    """The repository's taxonomy with the chain mechanic only (every chain cell has a named answer)."""
    dst.mkdir(parents=True, exist_ok=True)
    for path in src.glob("*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "mechanics" in data:
            data["mechanics"] = {"chain": data["mechanics"]["chain"]}
        (dst / path.name).write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
