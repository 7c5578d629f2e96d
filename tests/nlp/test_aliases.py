"""Alias links the corpus states itself: acronyms, "also known as", «(сокр. …)», «(англ. …)»."""

from __future__ import annotations

import re

import pytest

from factory.nlp.aliases import acronym_matches, find_aliases, split_acronym
from factory.nlp.models import load_pipeline
from factory.nlp.pipeline import doc_aliases, doc_mentions


def _mention(text: str, name: str, label: str = "organization") -> tuple[int, int, str, str]:
    start = text.index(name)
    return (start, start + len(name), name, label)


@pytest.mark.parametrize(
    "name,acronym,ok",
    [
        ("North Atlantic Treaty Organization", "NATO", True),
        ("Federal Bureau of Investigation", "FBI", True),
        ("Massachusetts Institute of Technology", "MIT", True),
        ("Министерство внутренних дел", "МВД", True),
        ("Организация Объединённых Наций", "ООН", True),
        ("Санкт-Петербургский государственный университет", "СПбГУ", True),
        ("Заречинский стекольный завод", "ЗСЗ", True),
        ("Apple", "company", False),
        ("Northern Cartographic Society", "NATO", False),
        ("Министерство внутренних дел", "ФСБ", False),
        ("Владимир Борисович Гройсман", "Володимир Борисович Гройсман", False),
        ("Московский институт стали и сплавов", "МИСиС", True),
    ],
)
def test_acronym_matches(name: str, acronym: str, ok: bool) -> None:
    assert acronym_matches(name, acronym) is ok


def test_split_acronym() -> None:
    assert split_acronym("Организация Объединённых Наций (ООН)") == ("Организация Объединённых Наций", "ООН")
    assert split_acronym("Apple (company)") is None


def test_english_rules() -> None:
    text = ("The North Atlantic Treaty Organization (NATO) met. Tobias Fenn (1902 – 1977), also known as "
            "\"the Quiet Lens\", filmed it. NATO (North Atlantic Treaty Organization) again. "
            "The Greyl Line, formerly known as Fenwick & Rode, sailed. Apple (company) sells.")
    mentions = [
        _mention(text, "North Atlantic Treaty Organization"),
        _mention(text, "Tobias Fenn", "person"),
        (text.index("NATO (North"), text.index("NATO (North") + 4, "NATO", "organization"),
        _mention(text, "The Greyl Line"),
        _mention(text, "Fenwick & Rode"),
        _mention(text, "Apple"),
    ]
    links = {(l.entity_key, l.alias_key, l.rule) for l in find_aliases(text, mentions, "en")}
    assert ("north atlantic treaty organization", "nato", "acronym") in links
    assert ("tobias fenn", "quiet lens", "aka") in links
    assert ("greyl line", "fenwick rode", "aka") in links
    assert not [l for l in links if "apple" in l[0]]
    assert len(links) == 3  # the reverse NATO form yields the same link as the first


def test_aka_needs_the_subject_or_a_same_kind_alias() -> None:
    text = ("The Second Congo War, also known as Africa's World War, began in 1998. "
            "It was written by Gustav Mahler, also known as the Resurrection Symphony in print. "
            "Troops led by Josip Broz, also known as Tito, advanced.")
    mentions = [
        _mention(text, "Second Congo War", "event"),
        (text.index("Africa"), text.index("Africa") + 6, "Africa", "location"),
        _mention(text, "Gustav Mahler", "person"),
        _mention(text, "Josip Broz", "person"),
        _mention(text, "Tito", "person"),
    ]
    links = {(l.entity_key, l.alias) for l in find_aliases(text, mentions, "en")}
    # the whole name after the phrase, not the mention "Africa" inside it
    assert links == {("second congo war", "Africa's World War"), ("josip broz", "Tito")}


def test_russian_rules() -> None:
    text = ("Арсен Павлов, более известный как Моторола, воевал. Государственная дума (сокр. Госдума) приняла "
            "закон. Всемирная организация здравоохранения (англ. World Health Organization, WHO) сообщила. "
            "Иосиф Джугашвили, также известный как Сталин, умер.")
    mentions = [
        _mention(text, "Арсен Павлов", "person"),
        _mention(text, "Моторола", "person"),
        _mention(text, "Государственная дума"),
        _mention(text, "Всемирная организация здравоохранения"),
        _mention(text, "Иосиф Джугашвили", "person"),
    ]
    links = {(l.entity_key, l.alias_key, l.rule) for l in find_aliases(text, mentions, "ru")}
    assert ("арсен павлов", "моторола", "aka") in links
    assert ("государственный дума", "госдума", "abbreviation") in links
    assert ("всемирный организация здравоохранение", "world health organization", "foreign_name") in links
    assert ("иосиф джугашвили", "сталин", "aka") in links


@pytest.mark.parametrize(
    "lang,text,link",
    [
        ("en", "The Northern Cartographic Society (NCS) is a learned society for map making.",
         ("northern cartographic society", "ncs")),
        ("en", "The Ashkel Valley Ironworks (AVI) was an iron and steel company.",
         ("ashkel valley ironworks", "avi")),
        ("ru", "Заречинский стекольный завод (ЗСЗ) — предприятие по выпуску листового стекла.",
         ("заречинский стекольный завод", "зсз")),
        ("ru", "Заречинский государственный университет (ЗГУ) — высшее учебное заведение в Заречинске.",
         ("заречинский государственный университет", "згу")),
    ],
)
def test_links_through_the_ner_pipeline(lang: str, text: str, link: tuple[str, str]) -> None:
    doc = load_pipeline(lang)(text)
    mentions = doc_mentions(doc, lang)
    assert link in {(l.entity_key, l.alias_key) for l in doc_aliases(doc, mentions, lang)}
    # the acronym is a mention of its own, never glued to the name ("... (ЗСЗ)")
    assert not [m for m in mentions if re.search(r"\(", m["text"])]
