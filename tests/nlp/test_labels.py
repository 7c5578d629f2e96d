"""Names that say they are another kind of thing than the label NER gave them."""

import pytest

from factory.nlp.labels import names_other_kind, other_kind_stem


@pytest.mark.parametrize("label,name", [
    ("event", "the Askia dynasty"),
    ("event", "the Volpi Cup for Best Actress"),
    ("event", "the Thirteen Colonies of Great Britain"),
    ("event", "Çanakkale Bridge"),
    ("event", "the Jurassic Period"),
    ("organization", "King of England"),
    ("organization", "The Qianlong Emperor"),
    ("organization", "UNESCO World Heritage Site"),
    ("organization", "the AFI Life Achievement Award"),
    ("organization", "BAFTA Awards"),
    ("organization", "Plymouth Colony"),
    ("organization", "the Emirate of Granada"),
    ("person", "under John Adams"),
    ("person", "ibn al-Ḥakam al-Rabdī"),
    ("work", "the Nobel Prize in Physics"),
    # draw 13: places tagged as organisations or events, rulers by their regnal numerals
    ("organization", "the Jamestown Settlement"),
    ("organization", "the Piazza della Signoria"),
    ("organization", "Piazza dei Miracoli"),
    ("organization", "Kaziranga National Park"),
    ("organization", "the Miguel de Cervantes Prize"),
    ("event", "the Korean Demilitarized Zone"),
    ("event", "Abdülhamid II"),
    ("organization", "Boleslaus IV"),
    ("organization", "Tsar Nicholas II"),
    ("location", "Louis IX"),
])
def test_another_kind(label, name):
    assert names_other_kind(label, name, "en")


@pytest.mark.parametrize("label,name", [
    ("event", "the Battle of Hastings"),
    ("event", "the Hundred Years' War"),
    ("event", "the Congress of Vienna"),
    ("organization", "House of Commons"),
    ("organization", "the Kano Emirate Council"),
    ("organization", "State Duma"),
    ("organization", "the Awards Committee"),
    ("person", "al-Biruni"),
    ("person", "Émile Zola"),
    ("work", "The Bridge on the River Kwai"),
    ("work", "Jurassic Park"),
    ("event", "World War II"),
    ("other", "Generation X"),
    ("organization", "Banco di Napoli"),
    ("organization", "Manchester City"),
    ("organization", "the Lake Placid Club"),
    ("person", "Louis IX"),
    # a play, a game or a match bears a numeral too
    ("work", "Henry V"),
    ("other", "Final Fantasy VII"),
    ("event", "Super Bowl XIV"),
    ("event", "Vatican II"),
])
def test_its_own_kind(label, name):
    assert not names_other_kind(label, name, "en")


def test_the_rules_are_english_only():
    assert not names_other_kind("person", "фон Браун", "ru")
    assert not names_other_kind("event", "the Askia dynasty", "ru")


def test_a_stem_is_the_words_before_the_head():
    assert other_kind_stem("event", "the Askia dynasty", "en") == "askia"
    assert other_kind_stem("work", "the Nobel Prize in Physics", "en") == "nobel"


def test_an_award_or_a_place_tagged_as_a_person_is_another_kind_but_its_namesake_is_not() -> None:
    from factory.nlp.labels import names_other_kind, other_kind_stem

    for name in ("Tony Awards", "Volpi Cups", "Grammy Awards", "Magdalene College", "Pisa Cathedral", "Wolf Prize"):
        assert names_other_kind("person", name, "en"), name
    for name in ("Shirley Temple Black", "Stan Laurel", "Irving Thalberg", "Tony Blair"):
        assert not names_other_kind("person", name, "en"), name
    assert other_kind_stem("person", "Laurel Award", "en") is None  # 'Laurel' may still be a person
    assert other_kind_stem("work", "the Nobel Prize in Physics", "en") == "nobel"
