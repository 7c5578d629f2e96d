"""Alias links the corpus states itself: acronyms in parentheses and "also known as".

Rules (both languages):

* ``acronym``: a name followed by its initials in parentheses, "North Atlantic Treaty
  Organization (NATO)", «Министерство внутренних дел (МВД)», or the other way round,
  "NATO (North Atlantic Treaty Organization)". The initials must match the name's
  word initials (all words, or all but function words), so "Apple (company)" is no link.
* ``abbreviation``: an explicit «(сокр. ГД)» / "(abbreviated GD)" after a name.
* ``aka``: "X, also known as Y", "X (better known as Y)", «X, также известный как Y»,
  «X, более известная как Y».
* ``foreign_name``: «Всемирная организация здравоохранения (англ. World Health
  Organization)»: the foreign name is an alias too (the leakage validator matches it).

The canonical side is always the full or first name; ``compute_statistics`` folds
each alias key into the canonical key it is most often linked to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from factory.nlp.keys import entity_key

_FUNCTION_WORDS = frozenset(
    "of the and for in on at to de la le du des von van der und и в во на по для о об при с со".split()
)
_ACRONYM = r"[^\W\d_][\w&.\-]{1,11}"
_PAREN_ACRONYM = re.compile(rf"\s*\(\s*({_ACRONYM})\s*[);,]")
_PAREN_ABBREVIATION = re.compile(r"\s*\(\s*(?:сокр\.|сокращённо|сокращенно|abbreviated|abbr\.)\s*([^;,)]{2,40})[;,)]", re.I)
_PAREN_FOREIGN = re.compile(
    r"\s*\(\s*(?:англ|нем|фр|франц|исп|итал|лат|укр|белор|кит|яп|араб|пол|тур|англ\.?\s*и\s*\w+)\.\s*([^;,)]{2,80})[;,)]",
    re.I,
)
# an aside in parentheses may sit between the name and the phrase: "Tobias Fenn (1902–1977), also known as"
_ASIDE = r"(?:\s*\([^()]{0,60}\))?"
_AKA = re.compile(
    _ASIDE + r"\s*,?\s*\(?\s*(?:(?:also|better|commonly|formerly|otherwise|popularly|now|later)\s+)?"
    r"(?:known|called|referred\s+to)\s+as\s+|\s*,?\s*\(?\s*(?:a\.k\.a\.|aka)\s+",
    re.I,
)
_AKA_RU = re.compile(
    _ASIDE + r"\s*,?\s*\(?\s*(?:(?:также|более|ранее|иначе|позднее|ныне)\s+)?(?:известн\w*|называем\w*|именуем\w*)\s+"
    r"(?:также\s+|ранее\s+|ныне\s+)?как\s+",
    re.I,
)
_QUOTED = re.compile(r"[«\"“„']([^»\"”']{2,80})[»\"”']")
_CAPITALISED_RUN = re.compile(r"(?:[A-ZА-ЯЁ][\w'’\-]*\.?)(?:\s+(?:[A-ZА-ЯЁ][\w'’\-]*\.?|of|the|de|и))*")
_TRAILING_JOINER = re.compile(r"(?:\s+(?:or|and|of|the|de|и|или))+$", re.I)
_LEADING_ARTICLE = re.compile(r"(?:^|(?<=\s))[Tt]he\s+$")


@dataclass(frozen=True)
class AliasLink:
    entity_key: str  # canonical
    alias_key: str
    alias: str  # the alias as written
    rule: str


def initials(name: str) -> tuple[str, str]:
    """Word initials of a name: (all words, content words only), upper-case; a leading
    article and a possessive 's are no words ("the People's Republic of China": PROC, PRC)."""
    words = re.findall(r"[^\W\d_]+", re.sub(r"(?<=\w)['’]s\b", "", name))
    if len(words) > 2 and words[0].lower() in ("the", "a", "an"):
        words = words[1:]
    every = "".join(w[0] for w in words).upper()
    content = "".join(w[0] for w in words if w.lower() not in _FUNCTION_WORDS).upper()
    return every, content


def acronym_matches(name: str, acronym: str) -> bool:
    """True when the capitals of ``acronym`` are the initials of ``name``: МВД, NATO, СПбГУ."""
    if not re.fullmatch(_ACRONYM, acronym):
        return False  # one token: "Владимир Борисович Гройсман" is no acronym of a name with those initials
    letters = "".join(ch for ch in acronym if ch.isupper())
    if len(letters) < 2 or 2 * len(letters) < sum(ch.isalpha() for ch in acronym):
        return False  # mostly capitals: МИСиС and СПбГУ are acronyms, "Nato" written as a word is not
    if len(re.findall(r"[^\W\d_]+", name)) < 2:
        return False
    every, content = initials(name)
    return letters in (every, content)


def split_acronym(text: str) -> tuple[str, str] | None:
    """'Организация Объединённых Наций (ООН)' -> (name, acronym), when the initials match."""
    match = re.fullmatch(rf"(.+?)\s*\(\s*({_ACRONYM})\s*\)", text.strip(), re.S)
    if match and acronym_matches(match.group(1), match.group(2)):
        return match.group(1), match.group(2)
    return None


def _alias_after(text: str, position: int, mentions: list[tuple[int, int, str, str]]) -> tuple[str, str | None] | None:
    """The name that starts at ``position`` and its label when it is a mention: a
    quoted string, else the longer of a mention starting there and the run of
    capitalised words there ("Africa's World War", not the mention "Africa" in it)."""
    rest = text[position:position + 120]
    quoted = _QUOTED.match(rest)
    if quoted:
        return quoted.group(1), None
    mention = next((m for m in mentions if position <= m[0] <= position + 2), None)
    run = _CAPITALISED_RUN.match(rest)
    run_text = run.group(0).rstrip(".") if run else None
    if mention and run_text and len(run_text) > len(mention[2]) and run_text.startswith(mention[2].lstrip("«\"“ ")):
        return run_text, None
    if mention:
        return mention[2], mention[3]
    return (run_text, None) if run_text else None


def _starts_sentence(text: str, start: int) -> bool:
    """The mention opens its sentence (an article before it allowed): "X, also known as Y,
    is ..." names X; in mid-sentence the phrase often belongs to a longer subject."""
    before = _LEADING_ARTICLE.sub("", text[:start]).rstrip()
    return not before or before[-1] in ".!?\n»\"”:;"


def find_aliases(text: str, mentions: list[tuple[int, int, str, str]], lang: str) -> list[AliasLink]:
    """Alias links in one chunk. ``mentions``: (start, end, text, label) of named mentions."""
    links: list[AliasLink] = []

    def link(name: str, label: str, alias: str, rule: str) -> None:
        alias = _TRAILING_JOINER.sub("", alias.strip(" \t\n\"'«»“”")).strip()
        canonical = entity_key(name, lang, label)
        alias_key = entity_key(alias, lang, label)
        if len(alias_key) >= 2 and canonical and alias_key != canonical:
            links.append(AliasLink(canonical, alias_key, alias, rule))

    for start, end, mention_text, label in mentions:
        after = text[end:end + 200]
        match = _PAREN_ACRONYM.match(after)
        if match and acronym_matches(mention_text, match.group(1).rstrip(".")):
            link(mention_text, label, match.group(1).rstrip("."), "acronym")
        else:
            # "NATO (North Atlantic Treaty Organization)": the mention is the acronym
            full = re.match(r"\s*\(\s*([^();,]{3,120})\)", after)
            if full and acronym_matches(full.group(1), mention_text):
                link(full.group(1), label, mention_text, "acronym")
        for pattern, rule in ((_PAREN_ABBREVIATION, "abbreviation"), (_PAREN_FOREIGN, "foreign_name")):
            found = pattern.match(after)
            if found:
                link(mention_text, label, found.group(1), rule)
        aka = (_AKA_RU if lang == "ru" else _AKA).match(after)
        if aka:
            found_alias = _alias_after(text, end + aka.end(), mentions)
            # kept when the name opens its sentence, or when the alias is a mention of the same kind
            if found_alias and (_starts_sentence(text, start) or found_alias[1] == label):
                link(mention_text, label, found_alias[0], "aka")
    return links
