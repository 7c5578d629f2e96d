"""The natasha-in-spaCy wrapper returns exactly natasha's spans; the rules add dates and numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.nlp.models import load_pipeline
from factory.nlp.quantities import find_ru_dates_numbers

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

TRICKY = [
    "Организация Объединённых Наций (ООН) и Министерство внутренних дел (МВД) России.",
    "05/08/2008 10:35\n\nБИШКЕК, 5 августа /Новости-Грузия/. Правоохранительные органы  Киргизии   нашли 26 автоматов.",
    "«Газпром» и ОАО «ЛУКОЙЛ» подписали соглашение в Санкт-Петербурге; Владимир Путин назвал его историческим.",
    "Президент США Барак Обама (Barack Obama) встретился с Ангелой Меркель в Берлине 12 марта 2009 года.",
    "Сотрудники ФСБ задержали 10, 20 и 30 человек.\tВ 1990-х годах на заводе работали 5 000 человек.",
    "   Текст с ведущими пробелами и Москвой в конце   ",
    "",
]


def _natasha_reference(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    from natasha import Doc, NewsEmbedding, NewsNERTagger, Segmenter

    segmenter, tagger = Segmenter(), NewsNERTagger(NewsEmbedding())
    out = []
    for text in texts:
        doc = Doc(text)
        doc.segment(segmenter)
        doc.tag_ner(tagger)
        out.append([(span.start, span.stop, span.type) for span in doc.spans])
    return out


def _sample() -> list[str]:
    texts = [json.loads(line)["text"] for line in (FIXTURES / "corpus_ru.jsonl").read_text(encoding="utf-8").splitlines()]
    # chunk-sized pieces too, so that spans near the cut and at the start are covered
    pieces = [text[i:i + 700] for text in texts[:6] for i in range(0, len(text), 650)]
    return TRICKY + texts + pieces


def test_wrapper_returns_exactly_natashas_spans() -> None:
    texts = _sample()
    nlp = load_pipeline("ru")
    expected = _natasha_reference(texts)
    got = []
    for doc in nlp.pipe(texts, batch_size=8):
        got.append([(e.start_char, e.end_char, e.label_) for e in doc.ents if e.label_ in {"PER", "LOC", "ORG"}])
    assert sum(len(x) for x in expected) > 200  # the sample really has entities
    assert got == expected


def test_tokenizer_keeps_the_text_and_aligns_rule_spans() -> None:
    nlp = load_pipeline("ru")
    for text in TRICKY:
        doc = nlp(text)
        assert doc.text == text
        rule = [(e.start_char, e.end_char) for e in doc.ents if e.label_ in {"DATE", "NUMBER"}]
        found = [(s, e) for s, e, _ in find_ru_dates_numbers(text)]
        # every rule span is an entity unless natasha already holds those characters
        natasha = [(e.start_char, e.end_char) for e in doc.ents if e.label_ in {"PER", "LOC", "ORG"}]
        for span in found:
            overlaps = any(s < span[1] and span[0] < e for s, e in natasha)
            assert span in rule or overlaps, (text, span)


def test_dates_and_numbers_in_context() -> None:
    doc = load_pipeline("ru")("В 1998 году в Заречинске жили 64 200 человек, а 12 марта 2001 года завод продали за 5 млн рублей.")
    spans = {(e.text, e.label_) for e in doc.ents}
    assert {("1998 году", "DATE"), ("64 200 человек", "NUMBER"), ("12 марта 2001 года", "DATE"),
            ("5 млн рублей", "NUMBER")} <= spans


@pytest.mark.parametrize(
    "text,expected",
    [
        ("в 10:35 по Москве", []),
        ("см. https://www.znak.com/2016-06-30/x", []),
        ("самолёт Ту-154 и МиГ-29", []),
        ("66-летнему гражданину", []),
        ("с 1998 по 2001 год", [("1998", "DATE"), ("2001 год", "DATE")]),
        ("в 1500 километрах", [("1500 километрах", "NUMBER")]),
        ("калибра 5,56 миллиметра", [("5,56", "NUMBER")]),
        ("XIX века", [("XIX века", "DATE")]),
        ("(1945)", [("1945", "DATE")]),
    ],
)
def test_rule_spans(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(text[s:e], label) for s, e, label in find_ru_dates_numbers(text)] == expected
