"""The rules of the corpus identity step, on keys alone (no store): which keys name one entity.

``merge_keys`` joins keys whose link needs no document evidence, each join recorded with
its rule and evidence:

* ``list``: a curated name list (``factory/nlp/names/<lang>.yaml``): «РФ» -> «Россия»;
* ``alias``: the corpus states it (``entity_aliases``: "Name (ACR)", "also known as");
* ``translit``: a Latin key and the one Cyrillic key of its label with the same
  transliteration skeleton («Twitter» / «Твиттер»);
* ``inflection``: Russian person keys that differ only in the case ending of a word the
  dictionary does not know («василий небензи» / «василий небензя»);
* ``middle``: a full name with middle names or a patronymic and the one name without
  them («владимир владимирович путин» -> «владимир путин»); two full names whose
  middles disagree («george walker bush», «george h w bush») are both left alone;
* ``initials``: initials and a surname and the one full name they fit («в в путин»).

``candidates`` then proposes the links that need documents as evidence (the identity
step counts the documents where both sides occur): an acronym and the multi-word names
whose initials it is, a surname alone and the full names ending in it.

The group representative (the *identity*) is a listed name first, then a full person
name, then the key with most mentions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from factory.nlp.aliases import acronym_matches, initials
from factory.nlp.keys import translit
from factory.nlp.name_lists import listed_keys
from factory.nlp.ru_names import is_initial, known_word

PERSON = "person"
_STEM_END = re.compile(r"(?:ого|его|ому|ему|ыми|ими|ами|ями|ой|ей|ом|ем|ым|им|ою|ею|ую|юю|ая|яя|ий|ый|ое|ее|ах|ях|"
                       r"а|я|у|ю|е|ы|и|ь|й)$")  # not -о: «Мадуро», «Роналдо» do not decline
_RU_FEMININE = re.compile(r"(?:ов|ев|ин|ын)а$|(?:ск|цк)ая$")
_ACRONYM_FORM = re.compile(r"[^\W\d_]{2,6}")


@dataclass
class KeyInfo:
    key: str
    label: str  # the most frequent label of its mentions
    mentions: int
    docs: int
    form: str  # the most frequent surface form
    person_share: float = 0.0  # of its mentions, the share NER labelled as a person

    @property
    def person(self) -> bool:
        # «Джона Кеннеди» is a person as often as an airport: the person rules see it
        return self.person_share >= 0.5 or self.label == PERSON


@dataclass(frozen=True)
class Edge:
    key: str
    other: str
    rule: str
    evidence: str


@dataclass
class Groups:
    """Union-find over the keys of one language, with the edge that joined each key."""

    keys: dict[str, KeyInfo]
    listed: set[str] = field(default_factory=set)
    parent: dict[str, str] = field(default_factory=dict)
    edges: dict[str, Edge] = field(default_factory=dict)

    def find(self, key: str) -> str:
        root = key
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(key, key) != root:
            self.parent[key], key = root, self.parent[key]
        return root

    def join(self, key: str, other: str, rule: str, evidence: str) -> bool:
        a, b = self.find(key), self.find(other)
        if a == b:
            return False
        for k, o in ((key, other), (other, key)):
            if k not in self.keys:  # an alias or a listed name no mention carries
                self.keys[k] = KeyInfo(k, self.keys[o].label, 0, 0, k)
        keep, drop = (a, b) if self._rank(a) >= self._rank(b) else (b, a)
        self.parent[drop] = keep
        # the evidence of a key is the join that linked it: the key being linked, and the
        # root that stopped being an identity (when the other side won the rank)
        self.edges.setdefault(key, Edge(key, other, rule, evidence))
        self.edges.setdefault(drop, Edge(drop, keep, rule, evidence))
        return True

    def _rank(self, key: str) -> tuple:
        info = self.keys[key]
        full_person = info.person and len(name_words(key)) >= 2
        return (key in self.listed, full_person, info.mentions, -len(key), key)


def name_words(key: str) -> list[str]:
    """The words of a person key that are not initials."""
    return [w for w in key.split() if not is_initial(w)]


def stem(word: str, lang: str) -> str:
    """A word without its case ending (Russian), for comparing spellings of one name;
    a Russian woman's surname keeps a mark («иванова» is not «иванов»)."""
    if lang != "ru":
        return word
    mark = "/f" if _RU_FEMININE.search(word) else ""
    cut = _STEM_END.sub("", word)
    return (cut if len(cut) >= 3 else word) + mark


_SUFFIXES = frozenset("jr sr junior senior младший старший".split())
_ROMAN = re.compile(r"[ivx]+")


def surname_sig(key: str, lang: str) -> str:
    """The stem of a person key's surname: its last word before a generational suffix
    («theodore roosevelt jr», «джордж буш младший») or a regnal number."""
    words = key.split()
    while len(words) > 1 and (words[-1] in _SUFFIXES or _ROMAN.fullmatch(words[-1])):
        words.pop()
    return stem(words[-1], lang) if words else ""


def _spelled_out(form: str) -> bool:
    """Two or more words written in lower case letters: a name an acronym can abbreviate
    («Министерство внутренних дел», not «РФ (ФНС)»)."""
    return sum(1 for w in re.findall(r"[^\W\d_]+", form) if any(ch.islower() for ch in w)) >= 2


def _latin(key: str) -> bool:
    return key.isascii() and any(ch.isalpha() for ch in key)


def merge_keys(lang: str, keys: dict[str, KeyInfo], aliases: dict[str, str]) -> Groups:
    """Join the keys of one language by the rules that need no document evidence."""
    groups = Groups(keys)
    listed = listed_keys(lang)
    groups.listed = {target for target, _ in listed.values()}
    for key in list(keys):
        if key in listed:
            target, name = listed[key]
            groups.keys.setdefault(target, KeyInfo(target, keys[key].label, 0, 0, name))
            groups.join(key, target, "list", f"a listed name of «{name}»")
    for alias, canonical in aliases.items():
        if alias in keys or canonical in keys:
            groups.join(alias, canonical, "alias", f"the corpus gives «{alias}» as a name of «{canonical}»")
    _translit(lang, groups)
    people = {k: v for k, v in keys.items() if v.person}
    if lang == "ru":
        _inflections(groups, people)
    _middles(lang, groups, people)
    _initials(lang, groups, people)
    return groups


def _translit(lang: str, groups: Groups) -> None:
    if lang != "ru":
        return
    by_skeleton: dict[tuple[str, str, bool], list[str]] = {}
    for key, info in groups.keys.items():
        skeleton = translit(key)
        if len(skeleton) >= 4:
            by_skeleton.setdefault((info.label, skeleton, _latin(key)), []).append(key)
    for (label, skeleton, latin), latins in by_skeleton.items():
        if not latin:
            continue
        cyrillic = by_skeleton.get((label, skeleton, False), [])
        if len(latins) == 1 and len(cyrillic) == 1:
            groups.join(latins[0], cyrillic[0], "translit", f"«{latins[0]}» and «{cyrillic[0]}» transliterate alike ({skeleton})")


def _inflections(groups: Groups, people: dict[str, KeyInfo]) -> None:
    buckets: dict[tuple[str, ...], list[str]] = {}
    for key in people:
        buckets.setdefault(tuple(stem(w, "ru") for w in key.split()), []).append(key)
    for sig, members in buckets.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda k: (-people[k].mentions, k))
        head = members[0]
        for other in members[1:]:
            differing = [(a, b) for a, b in zip(head.split(), other.split()) if a != b]
            # only a word the dictionary lacks is unsure of its ending: «мария» and «марио»
            # stay apart; a lone word needs both spellings unknown («кейт» is not «кейта»)
            unsure = all if len(sig) == 1 else any
            if differing and all(unsure((not known_word(a), not known_word(b))) for a, b in differing):
                groups.join(other, head, "inflection", f"«{other}» and «{head}» differ only in case endings")


def _middles(lang: str, groups: Groups, people: dict[str, KeyInfo]) -> None:
    two: dict[tuple[str, str], list[str]] = {}
    longer: dict[tuple[str, str], list[str]] = {}
    for key in people:
        words = key.split()
        if len(words) < 2 or is_initial(words[0]):
            continue
        ends = (stem(words[0], lang), surname_sig(key, lang))
        (two if len(words) == 2 else longer).setdefault(ends, []).append(key)
    for ends, keys in longer.items():
        middles = {tuple(w[0] for w in k.split()[1:-1]) for k in keys}
        if any(not (a[: len(b)] == b or b[: len(a)] == a) for a in middles for b in middles):
            continue  # «george walker bush» and «george h w bush»: two people
        targets = {groups.find(k) for k in two.get(ends, [])}
        if len(targets) > 1:
            continue
        anchor = next(iter(targets)) if targets else None
        for key in keys:
            if anchor is None:
                anchor = key
                continue
            groups.join(key, anchor, "middle", f"«{key}» is «{anchor}» with a middle name or patronymic")


def _initials(lang: str, groups: Groups, people: dict[str, KeyInfo]) -> None:
    whole: dict[str, set[str]] = {}
    for key in people:
        words = key.split()
        if len(words) >= 2 and not is_initial(words[0]):
            whole.setdefault(surname_sig(key, lang), set()).add(key)
    for key in people:
        words = key.split()
        if len(words) < 2 or not all(is_initial(w) for w in words[:-1]):
            continue
        fits = {groups.find(w) for w in whole.get(surname_sig(key, lang), ())
                if w.split()[0].startswith(words[0])
                and (len(words) < 3 or len(w.split()) < 3 or w.split()[1].startswith(words[1]))}
        if len(fits) == 1:
            target = next(iter(fits))
            groups.join(key, target, "initials", f"«{key}»: the one full name with these initials is «{target}»")


def candidates(lang: str, groups: Groups) -> list[tuple[str, str, str]]:
    """(identity, candidate identity, rule) pairs that need documents as evidence:
    ``acronym`` (an all-capitals name and every multi-word name it abbreviates) and
    ``surname`` (a one-word person and every full name ending in that surname)."""
    out: list[tuple[str, str, str]] = []
    by_initials: dict[str, set[str]] = {}
    for key, info in groups.keys.items():
        if not info.person and info.mentions and _spelled_out(info.form):
            for letters in set(initials(info.form)):
                by_initials.setdefault(letters, set()).add(key)
    spelled = {groups.find(k) for k, info in groups.keys.items() if info.mentions and _spelled_out(info.form)}
    for key, info in groups.keys.items():
        form = info.form.strip()
        if info.person or not info.mentions or not form.isupper() or not _ACRONYM_FORM.fullmatch(form):
            continue
        source = groups.find(key)
        if source in spelled:
            continue  # already joined to a spelled-out name («US» is «United States», not «United States Army»)
        for full in by_initials.get(form.upper(), ()):
            target = groups.find(full)
            if target != source and acronym_matches(groups.keys[full].form, form):
                out.append((source, target, "acronym"))
    full_by_sig: dict[str, set[str]] = {}
    for key, info in groups.keys.items():
        if info.person and len(key.split()) >= 2 and not is_initial(key.split()[0]):
            full_by_sig.setdefault(surname_sig(key, lang), set()).add(groups.find(key))
    for key, info in groups.keys.items():
        if info.person and len(key.split()) == 1 and not is_initial(key) and groups.find(key) == key:
            out.extend((key, target, "surname") for target in sorted(full_by_sig.get(surname_sig(key, lang), ())))
    return sorted(set(out))
