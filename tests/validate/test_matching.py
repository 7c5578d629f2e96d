"""Answer normalisation and matching."""

from __future__ import annotations

import pytest

from factory.validate.matching import match_answer, normalize_answer


@pytest.mark.parametrize(
    "candidate, reference, lang, kind",
    [
        ("Edmund Carrow", "Edmund Carrow", "en", "exact"),
        ("edmund carrow.", "Edmund Carrow", "en", "exact"),
        ("It was Edmund Carrow.", "Edmund Carrow", "en", "exact"),
        ("The founder was Edmund Carrow, an industrialist", "Edmund Carrow", "en", "contained"),
        ("Carrow", "Edmund Carrow", "en", "partial"),
        ("The Glass Orchard", "Glass Orchard", "en", "exact"),
        ("1000", "1,000", "en", "exact"),
        ("1 000", "1000", "en", "exact"),
        ("5200", "5,200 workers", "en", "exact"),
        ("twelve", "12", "en", "exact"),
        ("May 12, 1834", "12 May 1834", "en", "exact"),
        ("Эдмунда Карроу", "Эдмунд Карроу", "ru", "exact"),
        ("в Заречинске", "Заречинск", "ru", "contained"),
        ("6,4", "6.4", "ru", "exact"),
        ("двенадцать", "12", "ru", "exact"),
    ],
)
def test_matches(candidate, reference, lang, kind):
    found = match_answer(candidate, [reference], lang)
    assert found is not None and found.kind == kind


@pytest.mark.parametrize(
    "candidate, reference, lang",
    [
        ("Tobias Fenn", "Edmund Carrow", "en"),
        ("River Greyl", "River Ashkel", "en"),
        ("river", "River Ashkel", "en"),  # an ordinary word of the name is not the name
        ("1835", "1834", "en"),
        ("5,200", "5.2", "en"),
        ("Ольшанск", "Заречинск", "ru"),
        ("", "Заречинск", "ru"),
    ],
)
def test_non_matches(candidate, reference, lang):
    assert match_answer(candidate, [reference], lang) is None


def test_aliases_count():
    found = match_answer("AVI", ["Ashkel Valley Ironworks", "AVI"], "en")
    assert found is not None and found.reference == "AVI"


def test_normalize():
    assert normalize_answer("The  Glass Orchard!", "en") == normalize_answer("glass orchard", "en")
    assert normalize_answer("1,000,000", "en") == "1000000"


def test_tokenize_memo_hands_out_fresh_lists():
    """Tokenized texts are memoised; a caller that changes its list changes no one else's."""
    from factory.validate.tokens import tokenize

    text = "Сергиев Посад стоит на реке Кончура, 5,200 жителей"
    first = tokenize(text, "ru")
    first.pop()
    again = tokenize(text, "ru")
    assert len(again) == len(first) + 1 and again[-1].surface == "жителей"
    assert [t.lemma for t in again[:2]] == ["сергиев", "посад"]
    assert tokenize("5,200 workers", "en")[0].number == "5200"  # the language is part of the key
    assert tokenize("5,200 workers", "ru")[0].number == "5.2"

