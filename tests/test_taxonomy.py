"""The taxonomy as data: loading, compatibility, target shares, and errors that name file, line and key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from factory.records import Cell
from factory.taxonomy import TaxonomyError, default_taxonomy_dir, load_taxonomy


def test_repository_taxonomy_loads():
    tax = load_taxonomy()
    assert set(tax.mechanics) == {"chain", "intersection", "temporal", "comparison", "calculation"}
    assert set(tax.answer_types) == {"person", "organisation", "place", "date", "number", "work", "other"}
    for lang in ("en", "ru"):
        shares = tax.target_shares(lang)
        assert abs(sum(shares.values()) - 1.0) < 1e-9
        # hierarchical shares: a mechanic's share is its weight share, whatever its cell count
        total_w = sum(m.weight for m in tax.mechanics.values())
        for name, mech in tax.mechanics.items():
            got = sum(v for k, v in shares.items() if k.startswith(name + "/"))
            assert got == pytest.approx(mech.weight / total_w)


def test_compatibility_rules():
    tax = load_taxonomy()
    keys = {c.key for c in tax.cells("en")}
    calc = {k for k in keys if k.startswith("calculation/")}
    assert calc and all(k.endswith("/number") for k in calc), "a calculation yields a number"
    assert not any(k.startswith("temporal/") and k.endswith("/number") for k in keys), "temporal: date or entity"
    assert "temporal/direct/date" in keys and "temporal/direct/person" in keys
    assert not any(k.startswith("comparison/nested/") for k in keys)
    with pytest.raises(TaxonomyError, match="compatibility"):
        tax.spec(Cell(mechanic="calculation", form="direct", answer_type="person"))
    with pytest.raises(TaxonomyError, match="unknown mechanic 'nope'"):
        tax.spec(Cell.parse("nope/direct/person"))


def test_spec_guidance_per_language():
    tax = load_taxonomy()
    spec = tax.spec(Cell.parse("chain/direct/person"), lang="ru")
    assert spec.share > 0
    en, ru = spec.guidance("en"), spec.guidance("ru")
    assert "chain" in en.lower() and "цепочк" in ru.lower()
    assert spec.mechanic.selector == "chain" and spec.answer_type.labels == ["person"]


@pytest.fixture()
def tax_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "taxonomy"
    shutil.copytree(default_taxonomy_dir(), folder)
    return folder


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_weight_change_without_code(tax_copy):
    _edit(tax_copy / "mechanics.yaml", "weight: 0.30", "weight: 3.0")
    shares = load_taxonomy(tax_copy).target_shares("en")
    chain = sum(v for k, v in shares.items() if k.startswith("chain/"))
    assert chain == pytest.approx(3.0 / (3.0 + 0.25 + 0.15 * 3))


def test_bad_weight_names_file_line_and_key(tax_copy):
    _edit(tax_copy / "mechanics.yaml", "weight: 0.25", "weight: -1")
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(tax_copy)
    message = str(info.value)
    lines = (tax_copy / "mechanics.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "weight: -1" in text)
    assert f"mechanics.yaml:{line}: mechanics.intersection.weight" in message
    assert "greater than 0" in message


def test_unknown_field_and_unknown_reference(tax_copy):
    _edit(tax_copy / "forms.yaml", "weight: 0.8", "weight: 0.8\n    colour: blue")
    with pytest.raises(TaxonomyError, match=r"forms\.yaml:\d+: forms\.descriptive\.colour: Extra inputs"):
        load_taxonomy(tax_copy)
    shutil.copy(default_taxonomy_dir() / "forms.yaml", tax_copy / "forms.yaml")
    _edit(tax_copy / "mechanics.yaml", "answer_types: [number]", "answer_types: [numbr]")
    with pytest.raises(TaxonomyError, match=r"mechanics\.yaml:\d+: mechanics\.calculation.*unknown answer type 'numbr'"):
        load_taxonomy(tax_copy)


def test_unknown_selector_duplicate_and_syntax(tax_copy):
    _edit(tax_copy / "mechanics.yaml", "selector: temporal", "selector: time_machine")
    with pytest.raises(TaxonomyError, match="unknown selector 'time_machine'"):
        load_taxonomy(tax_copy)
    shutil.copy(default_taxonomy_dir() / "mechanics.yaml", tax_copy / "mechanics.yaml")
    (tax_copy / "more.yaml").write_text(
        "forms:\n  direct:\n    weight: 1\n    description: again\n    guidance: {en: x}\n", encoding="utf-8"
    )
    with pytest.raises(TaxonomyError, match=r"more\.yaml:2: forms\.direct: form 'direct' is defined twice"):
        load_taxonomy(tax_copy)
    (tax_copy / "more.yaml").write_text("forms: [unclosed\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match=r"more\.yaml: not valid YAML"):
        load_taxonomy(tax_copy)


def test_language_restrictions(tax_copy):
    _edit(tax_copy / "answer_types.yaml", "  work:\n    weight: 0.7", "  work:\n    weight: 0.7\n    langs: [en]")
    tax = load_taxonomy(tax_copy)
    assert any(c.answer_type == "work" for c in tax.cells("en"))
    assert not any(c.answer_type == "work" for c in tax.cells("ru"))
    _edit(tax_copy / "answer_types.yaml", "langs: [en]", "langs: [en, de]")
    with pytest.raises(TaxonomyError, match="unknown language 'de'"):
        load_taxonomy(tax_copy)


def test_missing_folder():
    with pytest.raises(TaxonomyError, match="no taxonomy here"):
        load_taxonomy(Path("/nonexistent/taxonomy"))
