"""Drafts with planted defects, generated over the fixture corpora (and clean ones).

Each fixture article is an entity (its title). Article A links to B when A's text
mentions B's name. A two-hop chain A -> B -> C gives a draft: the question names A,
the bridge is B, the answer is C (named in B's article); support = [A, B], answer
chunk = B. Clean questions describe B and C only by kind ('the river', 'человек').

Defects are planted into the same skeletons: the answer or the bridge written into the
question (as is, lower/upper case, possessive, surname alone, a typo, a Russian
inflected case, a Latin transliteration), broken schema fields, and questions built
from the answer chunk's own words (their own best query).
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from factory.records import Cell, Draft

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

KINDS = {
    "en": {"place": "town", "river": "river", "org": "organisation", "person": "person", "work": "book",
           "college": "college", "mount": "mountain", "event": "event", "bridge": "bridge", "lake": "lake"},
    "ru": {"gorod": "город", "reka": "река", "zavod": "предприятие", "person": "человек", "work": "книга",
           "org": "общество", "gazeta": "газета", "event": "событие", "ozero": "озеро", "monastyr": "монастырь",
           "most": "мост", "zhd": "дорога", "vuz": "университет", "teatr": "театр"},
}

CLEAN_TEMPLATES = {
    "en": [
        "Which {c} is tied to the {b} that the account of {a} brings up?",
        "Starting from {a}, follow the {b} it is connected with: which {c} belongs to that story?",
        "What {c} comes up in the history of the {b} linked to {a}?",
        "The record of {a} points to a {b}; which {c} does that {b} lead to?",
    ],
    "ru": [
        "В статье «{a}» упоминается ещё один объект (тип: {b}). Какой объект типа «{c}» связан с ним?",
        "От статьи «{a}» перейдите к связанному с ней объекту (тип: {b}): какой объект типа «{c}» с ним связан?",
        "Какой объект типа «{c}» упоминается в истории объекта (тип: {b}), с которым связана статья «{a}»?",
    ],
}

# the answer / bridge planted into the question; {x} is the leaked form
LEAK_TEMPLATES = {
    "en": {
        "answer": "Is {x} the {c} tied to the {b} that the account of {a} brings up?",
        "bridge": "Which {c} is tied to {x}, which the account of {a} brings up?",
    },
    "ru": {
        "answer": "Верно ли, что речь идёт о {x}, связанном с объектом (тип: {b}) из статьи «{a}»?",
        "bridge": "Какой объект типа «{c}» связан с {x} из статьи «{a}»?",
    },
}

# ISO-9-like transliteration, deliberately not the validator's own table
_ISO = dict(zip("абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
                ["a", "b", "v", "g", "d", "e", "yo", "zh", "z", "i", "y", "k", "l", "m", "n", "o", "p", "r", "s",
                 "t", "u", "f", "kh", "ts", "ch", "sh", "shch", "", "y", "", "e", "yu", "ya"]))


@dataclass
class Entity:
    doc_id: str
    chunk_id: str
    name: str
    kind: str
    person: bool
    surname: str
    text: str
    title: str


@dataclass
class Case:
    draft: Draft
    defect: str | None  # None = clean
    allowed: list[str]  # names the question may use (the start entity)


def load_entities(lang: str) -> list[Entity]:
    out = []
    for line in (FIXTURES / f"corpus_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        title = doc["title"]
        name = re.sub(r"\s*\(.*?\)", "", title).strip()
        surname = ""
        if "," in name:  # 'Брагин, Пётр Аникеевич'
            surname, given = [p.strip() for p in name.split(",", 1)]
            name = f"{given} {surname}"
        prefix = doc["id"].split("_")[1]
        person = prefix == "person"
        if person and not surname:
            surname = name.split()[-1]
        out.append(Entity(doc["id"], f"{doc['id']}_0", name, KINDS[lang].get(prefix, "объект" if lang == "ru" else "thing"),
                          person, surname, doc["text"], title))
    return out


def chunk_texts(lang: str) -> dict[str, tuple[str, str]]:
    return {e.chunk_id: (e.title, e.text) for e in load_entities(lang)}


def _mentions(text: str, name: str) -> bool:
    for word in name.split():
        if len(word) >= 5 and word[:1].isupper():
            stem = word[: max(4, len(word) - 3)]
            if re.search(rf"(?<!\w){re.escape(stem)}", text):
                return True
    return False


def _shares_word(a: str, b: str) -> bool:
    stems = lambda s: {w.casefold()[:5] for w in re.findall(r"\w+", s) if len(w) >= 4}  # noqa: E731
    return bool(stems(a) & stems(b))


@functools.lru_cache(maxsize=4)
def chains(lang: str) -> list[tuple[Entity, Entity, Entity]]:
    ents = load_entities(lang)
    links = {(a.doc_id, b.doc_id) for a in ents for b in ents if a is not b and _mentions(a.text, b.name)}
    out = []
    for a, b, c in itertools.permutations(ents, 3):
        if (a.doc_id, b.doc_id) in links and (b.doc_id, c.doc_id) in links:
            # a clean question names A only: A's name must not contain B's or C's
            if not _shares_word(a.name, b.name) and not _shares_word(a.name, c.name):
                out.append((a, b, c))
    return out


def _draft(lang: str, a: Entity, b: Entity, c: Entity, question: str, i: int, **changes) -> Draft:
    fields = dict(
        draft_id=f"planted-{lang}-{i}", candidate_id=f"planted-{lang}-{i}", lang=lang,
        cell=Cell(mechanic="chain", form="direct", answer_type="other"),
        question=question, answer=c.name, support_chunk_ids=[a.chunk_id, b.chunk_id],
        answer_chunk_id=b.chunk_id, bridge_entities=[b.name],
    )
    fields.update(changes)
    return Draft(**fields)


def clean_cases(lang: str, n: int, seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    found = list(chains(lang))  # a copy: chains() is cached and shuffled below
    rng.shuffle(found)
    cases = []
    for i, (a, b, c) in enumerate(itertools.islice(itertools.cycle(found), n)):
        template = CLEAN_TEMPLATES[lang][i % len(CLEAN_TEMPLATES[lang])]
        question = template.format(a=a.name, b=b.kind, c=c.kind)
        cases.append(Case(_draft(lang, a, b, c, question, i), None, [a.name]))
    return cases


def _typo(word: str, rng: random.Random) -> str:
    doubled = re.search(r"(\w)\1", word)
    if doubled:
        return word[: doubled.start()] + word[doubled.start() + 1 :]
    i = rng.randrange(2, len(word) - 1)
    return word[:i] + word[i] + word[i:]  # double a letter


def _inflect_ru(name: str, case: str) -> str:
    import pymorphy3

    morph = _morph_cache.setdefault("m", pymorphy3.MorphAnalyzer())
    words = []
    for word in name.split():
        parse = morph.parse(word)[0]
        form = parse.inflect({case})
        inflected = form.word if form else word
        words.append(inflected[:1].upper() + inflected[1:] if word[:1].isupper() else inflected)
    return " ".join(words)


_morph_cache: dict = {}


def leak_variants(entity: Entity, lang: str, rng: random.Random) -> list[tuple[str, str]]:
    """(variant kind, leaked text) for one name."""
    name = entity.name
    longest = max(name.split(), key=len)
    out = [("exact", name), ("lower", name.lower()), ("upper", name.upper())]
    if len(longest) >= 6:
        out.append(("typo", name.replace(longest, _typo(longest, rng))))
    if entity.person:
        out.append(("surname", entity.surname))
    if lang == "en":
        out.append(("possessive", f"{name}'s"))
        out.append(("punctuated", name.replace(" ", "-")))
    else:
        for case in ("gent", "datv", "ablt", "loct"):
            out.append((f"inflected_{case}", _inflect_ru(name, case)))
        out.append(("translit", "".join(_ISO.get(ch, ch) for ch in name.lower()).title()))
    return out


def leak_cases(lang: str, role: str, n: int, seed: int = 1) -> list[Case]:
    rng = random.Random(seed)
    found = list(chains(lang))  # a copy: chains() is cached and shuffled below
    rng.shuffle(found)
    cases = []
    for i, (a, b, c) in enumerate(itertools.islice(itertools.cycle(found), n)):
        target = c if role == "answer" else b
        kind, leaked = rng.choice(leak_variants(target, lang, rng))
        question = LEAK_TEMPLATES[lang][role].format(x=leaked, a=a.name, b=b.kind, c=c.kind)
        cases.append(Case(_draft(lang, a, b, c, question, 1000 + i), f"{role}_leak:{kind}", [a.name]))
    return cases


def schema_cases(lang: str, n: int, seed: int = 2) -> list[Case]:
    rng = random.Random(seed)
    base = clean_cases(lang, n, seed)
    defects = ["unknown_chunk", "answer_sentence", "answer_too_long", "answer_chunk_outside", "single_chunk",
               "parse_error", "empty_question", "empty_answer", "prompt_echo", "vague_question", "ungrounded",
               "long_alias"]
    out = []
    for i, case in enumerate(base):
        d = case.draft
        defect = defects[i % len(defects)]
        long_answer = {"en": "the small market town on the left bank of the river where wool traders settled first",
                       "ru": "небольшой торговый город на правом берегу реки, где впервые поселились купцы и ремесленники"}
        sentence = {"en": f"{d.answer} was the one that the chain leads to.",
                    "ru": f"{d.answer} был тем, к чему ведёт цепочка."}
        change = {
            "unknown_chunk": {"support_chunk_ids": d.support_chunk_ids + [f"missing_{rng.randrange(10**6)}_0"]},
            "answer_sentence": {"answer": sentence[lang]},
            "answer_too_long": {"answer": long_answer[lang]},
            "answer_chunk_outside": {"answer_chunk_id": "en_lake_tessaly_0" if lang == "en" else "ru_ozero_kalmen_0",
                                     "support_chunk_ids": [c for c in d.support_chunk_ids
                                                           if c not in {"en_lake_tessaly_0", "ru_ozero_kalmen_0"}]},
            "single_chunk": {"support_chunk_ids": [d.answer_chunk_id]},
            "parse_error": {"question": "", "answer": "", "support_chunk_ids": [], "answer_chunk_id": None,
                            "parse_error": "invalid JSON: Expecting ',' delimiter", "raw": '{"question": "Which'},
            "empty_question": {"question": "  "},
            "empty_answer": {"answer": ""},
            # what the embedded model wrote: an instruction instead of a question, the prompt's example alias
            "prompt_echo": {"answer_aliases": [{"en": "what this step establishes",
                                                "ru": "что устанавливает этот шаг"}[lang]]},
            "vague_question": {"question": {"en": "Combine the clues.", "ru": "Соедините подсказки."}[lang]},
            "ungrounded": {"question": {"en": "Which quiet thing did the old friendly neighbour eventually prefer?",
                                        "ru": "Что в итоге предпочёл тихий старый дружелюбный сосед?"}[lang]},
            "long_alias": {"answer_aliases": [long_answer[lang]]},
        }[defect]
        out.append(Case(d.model_copy(update={**change, "draft_id": f"schema-{lang}-{i}"}), f"schema:{defect}",
                        case.allowed))
    return out


def shortcut_cases(lang: str, n: int, seed: int = 3) -> list[Case]:
    """Questions made of the hidden evidence's own words: a sentence of the answer chunk (the
    start chunk's words are no defect: the question may name the start and find its passage)."""
    rng = random.Random(seed)
    found = list(chains(lang))  # a copy: chains() is cached and shuffled below
    rng.shuffle(found)
    lead = {"en": "Which {c} fits this description: {s}", "ru": "Какой объект типа «{c}» подходит под описание: {s}"}
    cases = []
    for i, (a, b, c) in enumerate(itertools.islice(itertools.cycle(found), n)):
        source = b
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", source.text) if len(s.split()) >= 8] or [source.text]
        sentence = sentences[i % len(sentences)] if i % 3 else sentences[0]
        question = lead[lang].format(c=c.kind, s=sentence.rstrip("."))
        cases.append(Case(_draft(lang, a, b, c, question, 2000 + i), "shortcut", [a.name]))
    return cases


ABSTRACT = {
    "en": {"person": "individual", "town": "settlement", "river": "body of water", "lake": "body of water",
           "organisation": "institution", "college": "institution", "book": "creative output", "event": "occurrence",
           "bridge": "structure", "mountain": "landform"},
    "ru": {"человек": "лицо", "город": "территория", "река": "водоём", "озеро": "водоём",
           "предприятие": "учреждение", "общество": "учреждение", "университет": "учреждение", "театр": "учреждение",
           "газета": "издание", "книга": "издание", "событие": "происшествие", "мост": "объект инфраструктуры",
           "монастырь": "объект инфраструктуры", "дорога": "объект инфраструктуры"},
}


def generic_cases(lang: str, n: int, seed: int = 4) -> list[Case]:
    """Clean for the shortcut check: no names and no words of the evidence, abstract kinds only.

    (Even kind words such as 'river' or 'bridge' surface the short fixture articles whose
    titles they are, which the shortcut check rightly rejects.)
    """
    words = {
        "en": ["Which {c} completes the chain that begins with one {a} and passes through one {b}?",
               "Following the links from one {a} via one {b}, which {c} do you arrive at?",
               "Name the {c} at the far end of a chain whose first link is one {a} and whose second is one {b}."],
        "ru": ["Какое {c} завершает цепочку, первое звено которой {a}, а второе {b}?",
               "Назовите {c}, которым заканчивается цепочка: {a}, затем {b}, затем ответ."],
    }
    abstract = lambda kind: ABSTRACT[lang].get(kind, "объект" if lang == "ru" else "entity")  # noqa: E731
    found = list(chains(lang))  # a copy: chains() is cached and shuffled below
    random.Random(seed).shuffle(found)
    cases = []
    for i, (a, b, c) in enumerate(itertools.islice(itertools.cycle(found), n)):
        template = words[lang][i % len(words[lang])]
        question = template.format(a=abstract(a.kind), b=abstract(b.kind), c=abstract(c.kind))
        cases.append(Case(_draft(lang, a, b, c, question, 3000 + i), None, [a.name]))
    return cases
