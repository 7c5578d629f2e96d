"""The corpus identity step on hand-made mentions: each rule links what it should and
leaves namesakes apart; mention_identities has one row per mention; entity names resolve."""

from __future__ import annotations

import pytest

from factory.graph.stats import compute_statistics
from factory.validate.base import store_entity_names

# doc -> [(key, surface, label), ...]; one chunk per document
DOCS = {
    # a surname across documents: the corpus has one full Мадуро, and they meet in r1
    "r1": [("николас мадуро", "Николас Мадуро", "person"), ("мадуро", "Мадуро", "person")],
    "r2": [("мадуро", "Мадуро", "person"), ("венесуэла", "Венесуэлы", "location")],
    # two full Клинтон: no corpus link; inside each document the one next to it
    "r3": [("хиллари клинтон", "Хиллари Клинтон", "person"), ("клинтон", "Клинтон", "person")],
    "r4": [("билл клинтон", "Билла Клинтона", "person"), ("клинтон", "Клинтона", "person")],
    "r5": [("клинтон", "Клинтон", "person")],
    # a surname the corpus links stays itself where another full name with it is named
    "r6": [("ким лесин", "Ким Лесин", "person"), ("лесин", "Лесин", "person")],
    "r7": [("дана лесина", "Даны Лесиной", "person"), ("лесин", "Лесин", "person")],
    # list, acronym (with a shared document), initials, middle name, inflection, transliteration
    "r8": [("рф", "РФ", "location"), ("россия", "России", "location"), ("российский", "российская", "location")],
    "r9": [("министерство чрезвычайный ситуация", "Министерство чрезвычайных ситуаций", "organization"),
           ("мчс", "МЧС", "organization")],
    "r10": [("мчс", "МЧС", "organization"), ("в в путин", "В. В. Путин", "person"),
            ("владимир путин", "Владимир Путин", "person")],
    "r11": [("владимир владимирович путин", "Владимир Владимирович Путин", "person"),
            ("василий небензи", "Василия Небензи", "person"), ("василий небензя", "Василий Небензя", "person")],
    "r12": [("twitter", "Twitter", "organization"), ("твиттер", "Твиттере", "organization"),
            ("2013-05-01", "1 мая 2013 года", "date")],
    # two full names whose middles disagree: neither joins the other
    "r13": [("джордж уокер буш", "Джордж Уокер Буш", "person"), ("джордж х у буш", "Джордж Х. У. Буш", "person")],
}


def _hash(doc: str) -> str:
    return f"h-{doc}"


@pytest.fixture()
def linked(store):
    store.append("chunks", [
        {"chunk_id": f"{d}_0", "doc_id": d, "n": 0, "lang": "ru", "title": d, "text": "…", "content_hash": _hash(d),
         "n_tokens": 1, "char_start": 0, "char_end": 1, "run_id": "t"} for d in DOCS
    ])
    store.append("mentions", [
        {"chunk_id": f"{d}_0", "doc_id": d, "start": i * 10, "end": i * 10 + 5, "text": text, "label": label,
         "ner_label": "X", "entity_key": key, "content_hash": _hash(d), "run_id": "t"}
        for d, items in DOCS.items() for i, (key, text, label) in enumerate(items)
    ])
    store.append("annotated_chunks", [
        {"chunk_id": f"{d}_0", "content_hash": _hash(d), "lang": "ru", "n_mentions": len(items), "run_id": "t"}
        for d, items in DOCS.items()
    ])
    compute_statistics(store, "t")
    return store


def _identity(store, doc: str, key: str) -> str:
    rows = store.query(
        'SELECT DISTINCT identity FROM mention_identities WHERE chunk_id = ? AND entity_key = ?', [f"{doc}_0", key]
    )
    assert len(rows) == 1, (doc, key, rows)
    return rows[0]["identity"]


def test_each_rule_links_what_it_should(linked) -> None:
    assert _identity(linked, "r2", "мадуро") == "николас мадуро"  # surname, across documents
    assert _identity(linked, "r3", "клинтон") == "хиллари клинтон"  # in the document
    assert _identity(linked, "r4", "клинтон") == "билл клинтон"
    assert _identity(linked, "r5", "клинтон") == "клинтон"  # two candidates: no link
    assert _identity(linked, "r6", "лесин") == "ким лесин"
    assert _identity(linked, "r7", "лесин") == "лесин"  # kept apart next to «Дана Лесина»
    assert {_identity(linked, "r8", k) for k in ("рф", "россия", "российский")} == {"россия"}  # list
    assert _identity(linked, "r10", "мчс") == _identity(linked, "r9", "министерство чрезвычайный ситуация")
    assert _identity(linked, "r10", "в в путин") == "владимир путин"  # initials
    assert _identity(linked, "r11", "владимир владимирович путин") == "владимир путин"  # patronymic
    assert _identity(linked, "r11", "василий небензи") == _identity(linked, "r11", "василий небензя")  # inflection
    assert _identity(linked, "r12", "twitter") == _identity(linked, "r12", "твиттер")  # transliteration
    assert _identity(linked, "r12", "2013-05-01") == "2013-05-01"  # dates are their own identity
    assert _identity(linked, "r13", "джордж уокер буш") != _identity(linked, "r13", "джордж х у буш")


def test_links_carry_rule_and_evidence(linked) -> None:
    rows = linked.query("SELECT entity_key, doc_id, identity, rule, evidence FROM current_entity_links")
    by_key = {(r["entity_key"], r["doc_id"]): r for r in rows}
    assert by_key[("мадуро", None)]["rule"] == "surname" and "together in 1" in by_key[("мадуро", None)]["evidence"]
    assert by_key[("клинтон", "r3")]["rule"] == "surname_in_document"
    assert by_key[("лесин", "r7")]["rule"] == "kept_in_document"
    assert by_key[("рф", None)]["rule"] == "list" and "Россия" in by_key[("рф", None)]["evidence"]
    assert {r["rule"] for r in rows} >= {"acronym", "initials", "middle", "inflection", "translit"}
    assert all(r["evidence"] for r in rows)
    # a rerun decides the same links
    compute_statistics(linked, "t2")
    again = linked.query("SELECT entity_key, doc_id, identity, rule, evidence FROM current_entity_links")
    assert sorted(map(str, again)) == sorted(map(str, rows))


def test_one_identity_row_per_mention_and_statistics_count_identities(linked) -> None:
    assert linked.scalar("SELECT count(*) FROM mention_identities") == linked.scalar("SELECT count(*) FROM mentions")
    ents = {r["entity_key"]: r for r in linked.query("SELECT * FROM current_entities")}
    assert "мадуро" not in ents and ents["николас мадуро"]["mention_count"] == 3
    assert ents["россия"]["mention_count"] == 3 and {"РФ", "российская"} <= set(ents["россия"]["aliases"])
    chunks = {r["entity_key"] for r in linked.query("SELECT entity_key FROM current_chunk_entities WHERE chunk_id = 'r2_0'")}
    assert chunks == {"николас мадуро", "венесуэла"}


def test_a_linked_key_resolves_to_its_entity_names(linked) -> None:
    names = store_entity_names(linked)
    assert "Мадуро" in names("мадуро") and "Николас Мадуро" in names("мадуро")
    assert names("рф")[0] == names("россия")[0]
    assert names("нет такого") == []
