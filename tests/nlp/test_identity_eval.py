"""The identity scorer: pair figures, shared identities, apart pairs, gold-file errors."""

from __future__ import annotations

import json

import pytest

from factory.nlp.identity_eval import GoldError, balanced, load_gold, score_identities


def _gold(tmp_path, clusters, apart=()):
    path = tmp_path / "gold.jsonl"
    lines = [json.dumps({"corpus": "c", "lang": "ru", "apart": [list(a) for a in apart]})]
    lines += [json.dumps({"id": cid, "label": "person", "mentions": ms}) for cid, ms in clusters.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_gold(path)


def test_pair_figures(tmp_path) -> None:
    gold = _gold(tmp_path, {
        "a": [["d1_0", 0, 5, "Путин"], ["d1_0", 10, 20, "Владимир Путин"], ["d2_0", 0, 5, "Путина"]],
        "b": [["d3_0", 0, 5, "Клинтон"], ["d4_0", 0, 5, "Клинтон"]],
        "c": [["d3_0", 10, 20, "Билл Клинтон"]],
    }, apart=[("b", "c", "namesakes")])
    identities = {("d1_0", 0, 5): "владимир путин", ("d1_0", 10, 20): "владимир путин", ("d2_0", 0, 5): "путин",
                  ("d3_0", 0, 5): "клинтон", ("d4_0", 0, 5): "клинтон", ("d3_0", 10, 20): "клинтон"}
    figures = score_identities(None, gold, identities=identities)
    assert figures["all_mentions"]["same_entity_pairs"] == 3 + 1
    assert figures["all_mentions"]["pairs_sharing_identity"] == 1 + 1
    assert figures["all_mentions"]["pair_recall"] == 0.5
    assert figures["identities"] == 3 and figures["identities_shared"] == 1
    assert figures["shared_identities"] == {"клинтон": ["b", "c"]}
    assert figures["apart_kept"] == 0 and figures["apart_violations"][0]["identities"] == ["клинтон"]
    # a gold mention the store lacks shares nothing
    del identities[("d2_0", 0, 5)]
    figures = score_identities(None, gold, identities=identities)
    assert figures["coverage"] == round(5 / 6, 4) and figures["all_mentions"]["pairs_sharing_identity"] == 2


def test_balanced_sample_keeps_three_of_each_form_from_distinct_documents(tmp_path) -> None:
    gold = _gold(tmp_path, {"a": [[f"d{i}_0", 0, 6, "России"] for i in range(6)] + [["d1_0", 9, 11, "РФ"]]})
    sample = balanced(gold.clusters[0])
    assert [m[3] for m in sample].count("России") == 3 and [m[3] for m in sample].count("РФ") == 1
    assert len({m[0] for m in sample if m[3] == "России"}) == 3


def test_gold_file_errors_name_the_line(tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"corpus": "c", "lang": "ru"}\n{"id": "a", "label": "person"}\n', encoding="utf-8")
    with pytest.raises(GoldError, match=r"bad.jsonl:2"):
        load_gold(path)
    path.write_text('{"corpus": "c", "apart": [["a", "zz", "x"]]}\n{"id": "a", "label": "p", "mentions": []}\n',
                    encoding="utf-8")
    with pytest.raises(GoldError, match="unknown clusters"):
        load_gold(path)


def test_the_shipped_gold_sets_load() -> None:
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    ru = load_gold(fixtures / "identity_gold_ru.jsonl")
    en = load_gold(fixtures / "identity_gold_en.jsonl")
    assert len(ru.clusters) >= 200 and len(ru.apart) >= 20 and ru.lang == "ru"
    assert len(en.clusters) >= 50 and en.lang == "en"
