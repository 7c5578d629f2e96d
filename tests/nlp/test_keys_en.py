"""English keys, normalisation, stems, date and number keys, transliteration."""

from __future__ import annotations

import pytest

from factory.nlp.keys import entity_key, lemmas, normalize, translit


def test_normalize_folds_case_punctuation_accents_and_acronym_dots() -> None:
    assert normalize("The U.S.A.'s  capital!", "en") == "the usa capital"
    assert normalize("Pokémon — Café", "en") == "pokemon cafe"
    assert normalize("Stanley Kubrick’s", "en") == "stanley kubrick"


@pytest.mark.parametrize(
    "forms",
    [
        ["the United States", "United States", "The United States'", "united states"],
        ["the U.S.", "US", "U.S."],
        ["Stanley Kubrick", "Stanley Kubrick's", "STANLEY KUBRICK"],
        ["ACME Inc.", "ACME"],
    ],
)
def test_english_forms_share_one_key(forms: list[str]) -> None:
    assert len({entity_key(f, "en", "organization" if "ACME" in f else None) for f in forms}) == 1


def test_english_names_are_not_stemmed() -> None:
    assert entity_key("Williams", "en", "person") != entity_key("William", "en", "person")


@pytest.mark.parametrize(
    "text,lang,key",
    [
        ("March 12, 2001", "en", "2001-03-12"),
        ("12 March 2001", "en", "2001-03-12"),
        ("12 марта 2001 года", "ru", "2001-03-12"),
        ("12.03.2001", "ru", "2001-03-12"),
        ("2016-06-30", "ru", "2016-06-30"),
        ("March 2001", "en", "2001-03"),
        ("в марте 2001 года", "ru", "2001-03"),
        ("1998", "en", "1998"),
        ("1998 году", "ru", "1998"),
        ("1998 г.", "ru", "1998"),
        ("the 1990s", "en", "1990s"),
        ("1990-х годов", "ru", "1990s"),
        ("the 19th century", "en", "century 19"),
        ("the nineteenth century", "en", "century 19"),
        ("XIX века", "ru", "century 19"),
        ("2001—2005 годах", "ru", "2001/2005"),
        ("between 1901 and 2000", "en", "1901/2000"),
        ("500 BC", "en", "500 bc"),
    ],
)
def test_date_keys(text: str, lang: str, key: str) -> None:
    assert entity_key(text, lang, "date") == key


@pytest.mark.parametrize(
    "text,lang,key",
    [
        ("5 млн рублей", "ru", "5000000 рубль"),
        ("5 млн рубля", "ru", "5000000 рубль"),
        ("$5 million", "en", "5000000 $"),
        ("48,300", "en", "48300"),
        ("64 200 человек", "ru", "64200 человек"),
        ("5,56", "ru", "5.56"),
        ("25%", "en", "25 %"),
        ("25 процентов", "ru", "25 %"),
        ("312 kilometres", "en", "312 kilometres"),
        ("1.5 billion", "en", "1500000000"),
    ],
)
def test_number_keys(text: str, lang: str, key: str) -> None:
    assert entity_key(text, lang, "number") == key


def test_english_lemmas_are_snowball_stems() -> None:
    assert lemmas("The running dogs of Paris's harbours", "en") == ["the", "run", "dog", "of", "pari", "harbour"]
    assert lemmas("harbour", "en") == lemmas("Harbours", "en")


@pytest.mark.parametrize(
    "cyrillic,latin",
    [
        ("Ельцин", "Yeltsin"),
        ("Чайковский", "Tchaikovsky"),
        ("Хрущёв", "Khrushchev"),
        ("Горбачёв", "Gorbachev"),
        ("Достоевский", "Dostoevsky"),
        ("Достоевский", "Dostoyevsky"),
        ("Москва", "Moskva"),
    ],
)
def test_translit_brings_both_scripts_together(cyrillic: str, latin: str) -> None:
    assert translit(cyrillic) == translit(latin)


def test_translit_keeps_different_names_apart() -> None:
    assert translit("Ельцин") != translit("Lenin")
    assert translit("Петров") != translit("Ivanov")
