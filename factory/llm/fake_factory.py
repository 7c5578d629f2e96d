"""A rule-based fake that drives the whole factory end to end (spec ``fake:factory``).

It answers the factory's own prompts from their content, recognised by the output
schema's name, so the pipeline runs without a model: fact sheets (sentences of each
passage), drafts (a question built from a few plain words of the non-answer passages,
never the hidden entities or the answer), revisions (the words the checks quoted as
leaks or shortcuts are replaced by other words of the same passages), closed-book answers ("unknown"), evidence answers, and a
one-search agent for the difficulty checker.

An evidence answer is given only when the question is one this fake composed and
every passage it was composed from is in the evidence (found by a sentence it took
from each), so leaving a support chunk out makes the question unsolvable, as the
necessity check expects. That memory lives in the process: after a restart, a
question composed before it (served from the gateway's cache) is answered "unknown".

Everything else falls back to the plain ``fake`` answers (an instance of the schema).
Tests, demos and the Russian end-to-end path use it; it measures nothing about models.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from typing import Any

from factory.llm.fake import FakeLLM, rule_reply
from factory.llm.types import LLMRequest
from factory.prompts import COMPOSER

_PASSAGE = re.compile(r'<passage id="(P\d+)">\s*(.*?)\s*</passage>', re.DOTALL)
_FACT_LINE = re.compile(r"^\[(P\d+)\]\s*(.+)$", re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?…])\s+(?=[A-ZА-ЯЁ0-9«\"(])")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_QUOTED = re.compile(r"[\"«]([^\"»\n]{1,80})[\"»]")
_NUMBER = re.compile(r"\d[\d\s.,]*")
PREFIX = {"en": "By this account, ", "ru": "По этим сведениям, "}
STOP = {
    "en": set("that this with from were have into which their there about after before when also been being other "
              "these those where while would could should than then them they what whom whose over under more most "
              "such only some very just both each many much".split()),
    "ru": set("который которая которое которые этот эта это эти того тому также после перед через более между "
              "когда где были было была есть него неё них свой своей своих также только очень всех весь".split()),
}
QUESTION = {
    "en": (
        "Which {noun} do you reach if you start from the account that mentions {first} "
        "and follow its link to the one about {second}?",
        "Start from the text that mentions {first}, then follow the link to the text on {second}: which {noun} is it?",
        "Which {noun} is at the end of the chain that begins with {first} and passes through {second}?",
    ),
    "ru": (
        "Что получится, если начать с записи, где упоминается {first}, и пройти по связи к записи о {second}?",
        "Начните с текста, где говорится о {first}, и перейдите к тексту о {second}: о чём идёт речь?",
        "Что стоит в конце цепочки, которая начинается с {first} и проходит через {second}?",
    ),
}
QUESTION_BARE = {
    "en": "Which {noun} do you reach by following the linked accounts from the first to the last?",
    "ru": "Что получится, если пройти по связанным записям от первой до последней?",
}
NOUN = {"number": "number", "year": "year", "name": "name"}


def _lang(text: str) -> str:
    cyrillic = sum(1 for c in text if "а" <= c.lower() <= "я" or c in "ёЁ")
    return "ru" if cyrillic > len(text) * 0.05 else "en"


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _user(request: LLMRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


class FactoryFake:
    """The reply function; holds the memory of composed questions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # question -> every (answer, one probe per passage) it was composed with: two candidates may
        # compose one question from different passages, and which came first must not matter
        self._composed: dict[str, set[tuple[str, tuple[str, ...]]]] = {}

    # ------------------------------------------------------------ dispatch
    def __call__(self, request: LLMRequest) -> Any:
        name = request.schema_name or ""
        user = _user(request)
        if name.startswith("Facts"):
            return fit(self.facts(user), request.output_schema or {})
        if name.startswith("DraftOut"):
            return fit(self.draft(user), request.output_schema or {})
        if name == "ClosedBookAnswer":
            return {"answer": "unknown"}
        if name == "EvidenceAnswer":
            return self.solve(user)
        if name == "JudgeAnswer":
            return {"same": False}
        if name == "agent_action":
            return self.agent_turn(request)
        if any(tool.name == "search_corpus" for tool in request.tools):  # the tools protocol (vLLM)
            action = self.agent_turn(request)
            return {"tool": action["action"], "arguments": action["arguments"]}
        return rule_reply(request)

    # ------------------------------------------------------- search agent
    @staticmethod
    def agent_turn(request: LLMRequest) -> dict[str, Any]:
        """A one-search agent: the question as its query, then the results as its ranking.

        It plays the difficulty checker cheaply and honestly for a fake: a draft whose own
        wording finds its support in one search is found here too (and reported too easy);
        any other draft is not. Under the JSON-action protocol it answers the action
        object; offered tools (an OpenAI-compatible server), it calls them.
        """
        texts = [m.content or "" for m in request.messages]
        question = next((q for t in texts for q in re.findall(r"^(?:Question|Вопрос):\s*(.+)$", t, re.MULTILINE)), "")
        shown = [c for t in texts[1:] for c in re.findall(r"^\[\d+\] chunk_id: (\S+)$", t, re.MULTILINE)]
        if not shown:
            return {"action": "search_corpus", "arguments": {"query": question[:150] or "?"}}
        ranking = [{"chunk_id": c, "reason": "returned by the search for the question itself"}
                   for c in dict.fromkeys(shown)][:10]
        return {"action": "finalize_ranking",
                "arguments": {"ranking": ranking, "covered_concepts": ["the question as a whole"],
                              "unresolved_concepts": []}}

    # ----------------------------------------------------------- fact sheet
    def facts(self, user: str) -> dict[str, Any]:
        lang = _lang(user)
        out = []
        for label, text in _PASSAGE.findall(user):
            sentences = [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) > 20]
            # sentences naming the most capitalised things carry the entities
            ranked = sorted(sentences, key=lambda s: -len(re.findall(r"\b[A-ZА-ЯЁ]\w+", s)))
            for sentence in ranked[:2] or [text[:300]]:
                out.append({"passage": label, "statement": sentence,
                            "paraphrase": PREFIX[lang] + sentence[0].lower() + sentence[1:]})
        return {"facts": out}

    # ---------------------------------------------------------------- draft
    def draft(self, user: str) -> dict[str, Any]:
        lang = _lang(user)
        say = COMPOSER.phrases(lang)
        facts: dict[str, list[str]] = {}
        for label, text in _FACT_LINE.findall(user):
            facts.setdefault(label, []).append(text.strip())
        hidden = self._listed(user, say["hidden"], say["none"])
        named = self._listed(user, say["named"], say["none"])
        answer = self._field(user, say["answer"], "name")
        if not answer:
            answer = self._open_answer(user, say, facts, hidden + named)
        labels = sorted(facts, key=lambda p: int(p[1:])) or ["P1"]
        # chains end at the answer: the last passage that states it
        answer_label = next((p for p in reversed(labels) if any(answer.casefold() in f.casefold() for f in facts[p])),
                            labels[-1])
        banned = self._banned(user) if "<history>" in user else set()  # revising: drop what the checks quoted
        avoid = {w.casefold() for name in hidden + named + [answer] for w in _WORD.findall(name)}
        clue_labels = [p for p in labels if p != answer_label] or labels
        # a stable choice per prompt, so different candidates get different words and templates
        pick = random.Random(hashlib.sha256(user.encode("utf-8")).hexdigest())
        clues: list[str] = []
        for label in clue_labels:
            words = self._plain_words(" ".join(facts.get(label, [])), lang, avoid | banned | set(clues))
            shortlist = words[: max(3, len(words) // 2)]
            clues.extend(pick.sample(shortlist, min(len(shortlist), 2 if not clues else 1)))
        noun = self._noun(answer)
        if len(clues) >= 2:
            # a revision takes other words of the same passages (the quoted ones are banned above)
            template = pick.choice(QUESTION[lang])
            question = template.format(noun=noun, first=self._quote(clues[:-1], lang),
                                       second=self._quote(clues[-1:], lang))
        else:
            question = QUESTION_BARE[lang].format(noun=noun)
        probes = [self._probe(facts[p][0], lang) for p in labels if facts.get(p)]
        with self._lock:
            self._composed.setdefault(_norm(question), set()).add((answer, tuple(probes)))
        passages = dict(_PASSAGE.findall(user))
        steps = [{"passage": p, "quote": self._quote_of(passages.get(p, ""), answer if p == answer_label else ""),
                  "finding": f"{p} gives the next link" if lang == "en" else f"{p} даёт следующее звено"}
                 for p in labels]
        return {"steps": steps, "answer": answer, "answer_aliases": [], "answer_passage": answer_label,
                "question": question}

    @staticmethod
    def _quote_of(text: str, must_hold: str = "") -> str:
        """A sentence of the passage, copied exactly (the one holding ``must_hold`` if any)."""
        sentences = [x for x in _SENTENCE.split(text) if x.strip()] or [text]
        chosen = next((x for x in sentences if must_hold and must_hold.casefold() in x.casefold()), sentences[0])
        chosen = chosen.strip()
        if len(chosen) > 280:  # the schema caps quotes: cut at a word, still an exact substring
            chosen = chosen[:280].rsplit(" ", 1)[0]
        return chosen

    @staticmethod
    def _field(user: str, template: str, key: str) -> str:
        pattern = "^" + re.escape(template).replace(re.escape("{" + key + "}"), f"(?P<{key}>.+)") + "$"
        match = re.search(pattern, user, re.MULTILINE)
        return match.group(key).strip() if match else ""

    def _listed(self, user: str, template: str, none: str) -> list[str]:
        value = self._field(user, template, "names")
        return [] if not value or value == none else [v.strip() for v in value.split(",") if v.strip()]

    def _open_answer(self, user: str, say: dict[str, str], facts: dict[str, list[str]], avoid: list[str]) -> str:
        operands = self._field(user, say["operands"], "items")
        numbers = [float(n.replace(" ", "").replace(",", ".")) for n in re.findall(r"(\d[\d ]*(?:[.,]\d+)?)\s*\(", operands)]
        if len(numbers) >= 2:
            total = sum(numbers)
            return str(int(total)) if total.is_integer() else f"{total:.2f}"
        candidates = self._field(user, say["candidates"], "items")
        if candidates:
            return candidates.split("=")[0].strip()
        for label in sorted(facts, key=lambda p: -int(p[1:])):
            for fact in facts[label]:
                for name in re.findall(r"(?<!^)(?<![.!?] )\b([A-ZА-ЯЁ][\w-]+(?: [A-ZА-ЯЁ][\w-]+)*)", fact):
                    if name not in avoid and len(name) > 3:
                        return name
        return "unknown"

    @staticmethod
    def _banned(user: str) -> set[str]:
        block = user.split("<history>", 1)[-1].split("</history>", 1)[0]
        banned: set[str] = set()
        for quoted in _QUOTED.findall(block):
            banned.update(w.casefold() for w in _WORD.findall(quoted))
        return banned

    @staticmethod
    def _plain_words(text: str, lang: str, avoid: set[str]) -> list[str]:
        text = text.removeprefix(PREFIX[lang])
        words = []
        for word in _WORD.findall(text):
            folded = word.casefold()
            if word[0].isupper() or len(word) < 4 or folded in STOP[lang] or folded in avoid or folded in words:
                continue
            words.append(folded)
        # shorter words first: in a corpus they tend to be the common ones, which lead nowhere on their own
        return sorted(words, key=lambda w: (len(w), words.index(w)))

    @staticmethod
    def _quote(words: list[str], lang: str) -> str:
        if lang == "ru":
            return " и ".join(f"«{w}»" for w in words)
        return " and ".join(f'"{w}"' for w in words)

    @staticmethod
    def _noun(answer: str) -> str:
        if re.fullmatch(r"\d{3,4}", answer.strip()):
            return NOUN["year"]
        if _NUMBER.fullmatch(answer.strip()):
            return NOUN["number"]
        return NOUN["name"]

    @staticmethod
    def _probe(fact: str, lang: str) -> str:
        sentence = fact.removeprefix(PREFIX[lang])
        sentence = sentence[:1].upper() + sentence[1:]
        words = sentence.split()
        return " ".join(words[1:7]) if len(words) > 3 else sentence  # skip the case-changed first word

    # -------------------------------------------------------------- solving
    def solve(self, user: str) -> dict[str, Any]:
        question = self._question_in(user)
        with self._lock:
            known = sorted(self._composed.get(_norm(question), ()))
        evidence = _norm(user)
        found = next((answer for answer, probes in known if all(_norm(p) in evidence for p in probes)), None)
        if found is not None:
            return {"reasoning": "Each passage gives one step of the chain.", "answer": found, "other_answers": []}
        return {"reasoning": "The passages do not connect to an answer.", "answer": "unknown", "other_answers": []}

    @staticmethod
    def _question_in(user: str) -> str:
        found = re.findall(r"^(?:Question|Вопрос):\s*(.+)$", user, re.MULTILINE)
        return found[-1].strip() if found else ""  # the prompt's own line comes after the evidence


def fit(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """Cut strings and lists to the schema's maxLength and maxItems, as a constrained decoder would."""
    root = root or schema
    schema = _resolve(schema, root)
    for combo in ("anyOf", "allOf", "oneOf"):
        options = [_resolve(o, root) for o in schema.get(combo, [])]
        # the option the value is written in: an object's by its keys ('no_honest_question' or a
        # draft's), else the first that is not null
        fitting = [o for o in options if isinstance(value, dict) and set(value) <= set(o.get("properties", {}))]
        chosen = fitting or [o for o in options if o.get("type") not in (None, "null")]
        if chosen:
            schema = chosen[0]
            break
    if isinstance(value, str) and "maxLength" in schema:
        return value[: int(schema["maxLength"])]
    if isinstance(value, list):
        items = value[: int(schema["maxItems"])] if "maxItems" in schema else value
        return [fit(v, schema.get("items", {}), root) for v in items]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: fit(v, props.get(k, {}), root) for k, v in value.items()}
    return value


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def factory_fake(*, delay_s: float = 0.0, model: str = "fake-factory") -> FakeLLM:
    return FakeLLM(default=FactoryFake(), model=model, delay_s=delay_s)
