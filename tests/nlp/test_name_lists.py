"""The curated name lists: keyed forms, and clear errors for a malformed list."""

from __future__ import annotations

import pytest

from factory.nlp.name_lists import NameEntry, NameListError, keys_of, listed_keys, load_name_list, read_name_list


def test_russian_list_keys_forms_as_text_would_key_them() -> None:
    keys = listed_keys("ru")
    assert keys["рф"][0] == keys["российский федерация"][0] == keys["российский"][0] == "россия"
    assert keys["американский"][0] == keys["америка"][0] == "сша"
    assert keys["дума"][0] == keys["государственный дума"][0] == "госдума"
    assert keys["кнр"][0] == "китай"
    assert "россия" not in keys  # a name is its own identity
    assert all(entry.forms for entry in load_name_list("ru"))


def test_english_list() -> None:
    keys = listed_keys("en")
    assert keys["us"][0] == keys["usa"][0] == "united states"
    assert keys["ussr"][0] == "soviet union"
    assert load_name_list("xx") == ()


def test_malformed_lists_name_the_file_and_entry(tmp_path) -> None:
    path = tmp_path / "ru.yaml"
    path.write_text("- name: Россия\n  label: location\n", encoding="utf-8")
    with pytest.raises(NameListError, match=r"ru.yaml: entry 1"):
        read_name_list(path)
    path.write_text("- name: Россия\n  label: planet\n  forms: [РФ]\n", encoding="utf-8")
    with pytest.raises(NameListError, match="unknown label"):
        read_name_list(path)
    path.write_text("not: a list\n", encoding="utf-8")
    with pytest.raises(NameListError, match="expected a list"):
        read_name_list(path)
    twice = [NameEntry(name="Россия", label="location", forms=("РФ",)),
             NameEntry(name="Франция", label="location", forms=("РФ",))]
    with pytest.raises(NameListError, match="entry 2 .Франция.: form 'РФ' is already a name of 'Россия'"):
        keys_of(twice, "ru")
