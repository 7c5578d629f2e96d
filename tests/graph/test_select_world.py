"""Selectors on a hand-made entity world (written as NER would, offsets found in the text)."""

from __future__ import annotations

import hashlib
import random

import pytest

from factory.graph.select import (REDRAWS, NoSubgraph, SelectionIndex, SelectorParams, select_subgraph,
                                  unsupported_cells)
from factory.records import Cell
from factory.taxonomy import load_taxonomy

# (doc id, title, text, [(surface, label)])  -- keys are the casefolded surface
WORLD_EN = [
    ("vellmoor", "Vellmoor",
     "Vellmoor is a market town in England on the River Ashkel. It was founded in 1712 and renamed Vellmoor in 1801. "
     "Edmund Carrow opened the Ashkel Valley Ironworks there in 1834. Its population is 48,300.",
     [("Vellmoor", "location"), ("England", "location"), ("River Ashkel", "location"), ("1712", "date"),
      ("1801", "date"), ("Edmund Carrow", "person"), ("Ashkel Valley Ironworks", "organization"), ("1834", "date"),
      ("48,300", "number")]),
    ("carrow", "Edmund Carrow",
     "Edmund Carrow (1790-1861) was an English ironmaster born in Dunmere, England. He founded the Ashkel Valley "
     "Ironworks and sat in the Parliament of England from 1841.",
     [("Edmund Carrow", "person"), ("1790", "date"), ("1861", "date"), ("Dunmere", "location"), ("England", "location"),
      ("Ashkel Valley Ironworks", "organization"), ("Parliament of England", "organization"), ("1841", "date")]),
    ("dunmere", "Dunmere",
     "Dunmere is a port city in England at the mouth of the River Ashkel, with 210,000 inhabitants. The Dunmere "
     "Lighthouse was built in 1788 by the Harbour Trust.",
     [("Dunmere", "location"), ("England", "location"), ("River Ashkel", "location"), ("210,000", "number"),
      ("Dunmere Lighthouse", "other"), ("1788", "date"), ("Harbour Trust", "organization")]),
    ("oswick", "Maren Oswick",
     "Maren Oswick (born 1952) is a poet who grew up in England near the Ashkel Valley Ironworks. Her novel The Salt "
     "Ledger won the Corrin Prize in 1994.",
     [("Maren Oswick", "person"), ("1952", "date"), ("England", "location"), ("Ashkel Valley Ironworks", "organization"),
      ("The Salt Ledger", "work"), ("Corrin Prize", "other"), ("1994", "date")]),
    ("ashkel", "River Ashkel",
     "The River Ashkel is 312 kilometres long. It rises on Mount Orrin and flows past Dunmere into Lake Tessaly; "
     "its first map was drawn in 1872 by Ilse Vantongeren.",
     [("River Ashkel", "location"), ("312 kilometres", "number"), ("Mount Orrin", "location"), ("Dunmere", "location"),
      ("Lake Tessaly", "location"), ("1872", "date"), ("Ilse Vantongeren", "person")]),
    ("corrin", "Corrin Prize",
     "The Corrin Prize is a literary award of England founded in 1960 by the Corrin Society. Its winners include Tobias "
     "Fenn and Ada Brisk.",
     [("Corrin Prize", "other"), ("England", "location"), ("1960", "date"), ("Corrin Society", "organization"),
      ("Tobias Fenn", "person"), ("Ada Brisk", "person")]),
    ("fenn", "Tobias Fenn",
     "Tobias Fenn (1931-2004) was a poet born in Dunmere, England. He won the Corrin Prize in 1971 for Lanterns, "
     "written for Nell Ormond, and taught at the Harbour Trust school for 12 years.",
     [("Tobias Fenn", "person"), ("1931", "date"), ("2004", "date"), ("Dunmere", "location"), ("England", "location"),
      ("Corrin Prize", "other"),
      ("1971", "date"), ("Lanterns", "work"), ("Nell Ormond", "person"), ("Harbour Trust", "organization"), ("12 years", "number")]),
    ("ironworks", "Ashkel Valley Ironworks",
     "The Ashkel Valley Ironworks was an iron foundry opened in 1834 by Edmund Carrow. At its peak it employed 3,400 "
     "workers; it was renamed Carrow Steel in 1919 and closed in 1962.",
     [("Ashkel Valley Ironworks", "organization"), ("1834", "date"), ("Edmund Carrow", "person"), ("3,400", "number"),
      ("Carrow Steel", "organization"), ("1919", "date"), ("1962", "date")]),
    ("tessaly", "Lake Tessaly",
     "Lake Tessaly in England covers 88 square kilometres. The River Ashkel and the Orrin Brook drain into it, and the "
     "Harbour Trust has run its ferries since 1903.",
     [("Lake Tessaly", "location"), ("England", "location"), ("88 square kilometres", "number"),
      ("River Ashkel", "location"), ("Orrin Brook", "location"), ("Harbour Trust", "organization"), ("1903", "date")]),
    ("vantongeren", "Ilse Vantongeren",
     "Ilse Vantongeren (1840-1911) was a Flemish cartographer who charted rivers for 30 years.",
     [("Ilse Vantongeren", "person"), ("1840", "date"), ("1911", "date"), ("30 years", "number")]),
    ("brisk", "Ada Brisk",
     "Ada Brisk (born 1948) is a poet from Vellmoor, England. She won the Corrin Prize in 1989 and wrote The Glass Ferry.",
     [("Ada Brisk", "person"), ("1948", "date"), ("Vellmoor", "location"), ("England", "location"),
      ("Corrin Prize", "other"),
      ("1989", "date"), ("The Glass Ferry", "work")]),
]

WORLD_RU = [
    ("spb", "Санкт-Петербург",
     "Санкт-Петербург основан в 1703 году Петром I. В 1914 году город переименовали в Петроград.",
     [("Санкт-Петербург", "location", "санкт-петербург"), ("1703 году", "date", "1703"), ("Петром I", "person", "пётр i"),
      ("1914 году", "date", "1914"), ("Петроград", "location", "петроград")]),
    ("peter", "Пётр I",
     "Пётр I родился в Москве в 1672 году. Он основал Санкт-Петербург и Адмиралтейство.",
     [("Пётр I", "person", "пётр i"), ("Москве", "location", "москва"), ("1672 году", "date", "1672"),
      ("Санкт-Петербург", "location", "санкт-петербург"), ("Адмиралтейство", "organization", "адмиралтейство")]),
    ("admiralty", "Адмиралтейство",
     "Адмиралтейство в Санкт-Петербурге заложено в 1704 году; его шпиль высотой 72 метра.",
     [("Адмиралтейство", "organization", "адмиралтейство"), ("Санкт-Петербурге", "location", "санкт-петербург"),
      ("1704 году", "date", "1704"), ("72 метра", "number", "72 метра")]),
    ("moscow", "Москва",
     "Москва — столица России; в 1712 году Пётр I перенёс столицу в Санкт-Петербург.",
     [("Москва", "location", "москва"), ("России", "location", "россия"), ("1712 году", "date", "1712"),
      ("Пётр I", "person", "пётр i"), ("Санкт-Петербург", "location", "санкт-петербург")]),
]


def write_world(store, world, lang: str) -> None:
    chunks, mentions = [], []
    for doc_id, title, text, ents in world:
        chunk_id = f"{doc_id}_0"
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunks.append({"chunk_id": chunk_id, "doc_id": doc_id, "n": 0, "lang": lang, "title": title, "text": text,
                       "content_hash": digest, "n_tokens": len(text.split())})
        for ent in ents:
            surface, label = ent[0], ent[1]
            key = ent[2] if len(ent) > 2 else surface.casefold()
            start = 0
            while (pos := text.find(surface, start)) >= 0:
                mentions.append({"chunk_id": chunk_id, "doc_id": doc_id, "start": pos, "end": pos + len(surface),
                                 "text": surface, "label": label, "entity_key": key, "content_hash": digest})
                start = pos + len(surface)
            assert start > 0, f"{surface!r} not in {doc_id}"
    store.append("chunks", chunks)
    store.append("mentions", mentions)


@pytest.fixture()
def world(store):
    write_world(store, WORLD_EN, "en")
    write_world(store, WORLD_RU, "ru")
    return store


def chunk_mentions(store) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in store.query("SELECT chunk_id, entity_key FROM mentions"):
        out.setdefault(row["chunk_id"], set()).add(row["entity_key"])
    return out


def doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit("_", 1)[0]


TAX = load_taxonomy()
# a toy encyclopedia: every entity has its article, so articles' subjects may be answers here
SMALL = SelectorParams(bridge_max_df=4, answer_max_df=50, article_answers=True)


def encyclopedia_persons(ix: SelectionIndex) -> set[int]:
    """The person answers where, as in a real encyclopedia, an article's subject is none."""
    from factory.graph.selectors.chain import answer_pool

    return set(answer_pool(ix, frozenset({"person"}), SMALL.model_copy(update={"article_answers": False})))


def drawn(source, cell: Cell, seeds: int) -> list:
    """The subgraphs the toy selectors draw for ``cell`` with seeds 0..seeds-1 (where one exists)."""
    found = []
    for seed in range(seeds):
        try:
            found.append(select_subgraph(source, cell, "en", random.Random(seed), params=SMALL, taxonomy=TAX))
        except NoSubgraph:
            continue
    return found


@pytest.mark.parametrize("answer_type", ["person", "place", "organisation", "date", "number"])
def test_chain_connects_through_bridges(world, answer_type):
    held = chunk_mentions(world)
    cell = Cell(mechanic="chain", form="direct", answer_type=answer_type)
    ix = SelectionIndex.load(world, "en")
    found = 0
    for sub in drawn(ix, cell, 25):
        found += 1
        ids = sub.chunk_ids
        assert len(ids) == 2 and len(sub.bridge_entities) == 1
        assert len({doc_of(c) for c in ids}) == len(ids), "chunks from different documents"
        for (left, right), bridge in zip(zip(ids, ids[1:]), sub.bridge_entities):
            assert bridge in held[left] and bridge in held[right], "consecutive chunks share the bridge"
        assert "england" not in sub.bridge_entities, "a hub (df 5 > 4) is never a bridge"
        assert sub.answer_entity in held[ids[-1]] and sub.answer_entity not in held[ids[0]]
        start = sub.figures["start_entity"]
        assert start in held[ids[0]]
        assert not any(start in ents and sub.answer_entity in ents for ents in held.values()), "no shortcut chunk"
        assert sub.roles == {ids[0]: "start", ids[-1]: "answer"}
        label = sub.figures["entities"][sub.answer_entity]["label"]
        assert label in TAX.answer_types[answer_type].labels
    assert found >= 5, f"the world has chains ending in a {answer_type}"


def test_three_hop_chain_added_as_data(world, tmp_path):
    """A user adds a mechanic in YAML (a three-chunk chain) and it selects without code changes."""
    import shutil

    from factory.taxonomy import default_taxonomy_dir

    folder = tmp_path / "taxonomy"
    shutil.copytree(default_taxonomy_dir(), folder)
    (folder / "extra.yaml").write_text(
        "mechanics:\n"
        "  long_chain:\n"
        "    weight: 0.1\n"
        "    description: three documents in a row\n"
        "    selector: chain\n"
        "    params: {hops: 3, bridge_max_df: 5}\n"
        "    guidance: {en: Hop twice., ru: Два перехода.}\n",
        encoding="utf-8",
    )
    taxonomy = load_taxonomy(folder)
    cell = Cell(mechanic="long_chain", form="direct", answer_type="person")
    assert cell in taxonomy.cells("en")
    held = chunk_mentions(world)
    ok = 0
    for seed in range(30):
        try:
            sub = select_subgraph(world, cell, "en", random.Random(seed), taxonomy=taxonomy,
                                  params=SelectorParams(article_answers=True))
        except NoSubgraph:
            continue
        ok += 1
        ids = sub.chunk_ids
        assert len(ids) == 3 and len({doc_of(c) for c in ids}) == 3
        assert list(sub.roles.values()) == ["start", "hop", "answer"]
        for (left, right), bridge in zip(zip(ids, ids[1:]), sub.bridge_entities):
            assert bridge in held[left] and bridge in held[right]
    assert ok >= 3


def test_selection_is_reproducible_from_the_rng(world):
    cell = Cell(mechanic="chain", form="nested", answer_type="date")
    one = select_subgraph(world, cell, "en", random.Random(4), params=SMALL, taxonomy=TAX)
    two = select_subgraph(world, cell, "en", random.Random(4), params=SMALL, taxonomy=TAX)
    one.figures.pop("select_ms"), two.figures.pop("select_ms")
    assert one == two


def test_avoid_chunk_sets(world):
    cell = Cell(mechanic="chain", form="direct", answer_type="person")
    seen: set[frozenset[str]] = set()
    for seed in range(8):
        try:
            sub = select_subgraph(world, cell, "en", random.Random(seed), avoid_chunk_sets=seen, params=SMALL,
                                  taxonomy=TAX)
        except NoSubgraph as exc:
            assert "already used" in exc.reason or "no " in exc.reason
            continue
        key = frozenset(sub.chunk_ids)
        assert key not in seen
        seen.add(key)
    assert len(seen) >= 2


def test_avoid_answers_a_model_already_knows(world):
    """A reselection after a closed-book failure must not draw the same answer again: the loop
    passes it in ``avoid_answers``; once every answer the cell can have is known, it says so."""
    cell = Cell(mechanic="chain", form="direct", answer_type="date")
    known: set[str] = set()
    for _ in range(12):
        try:
            sub = select_subgraph(world, cell, "en", random.Random(5), avoid_answers=known, params=SMALL, taxonomy=TAX)
        except NoSubgraph as exc:
            assert "already knows" in exc.reason
            break
        assert sub.answer_entity not in known
        known.add(sub.answer_entity)
    else:
        raise AssertionError("the world's date answers never ran out")
    assert len(known) >= 2


def test_a_reselection_is_never_mostly_the_subgraph_it_was_declined_for(world):
    """A candidate that declined a subgraph passes its support as ``declined``: the next draw
    shares less than half its passages with it (no same three candidates, no same start
    passage with another answer), and says so when the cell has nothing else."""
    from factory.graph.select import near

    for cell in (Cell(mechanic="chain", form="direct", answer_type="person"),
                 Cell(mechanic="intersection", form="direct", answer_type="place")):
        declined: set[frozenset[str]] = set()
        drawn = 0
        for _ in range(12):
            try:
                sub = select_subgraph(world, cell, "en", random.Random(3), declined=declined, params=SMALL,
                                      taxonomy=TAX)
            except NoSubgraph as exc:  # every redraw was a near repeat, and the reason says so alone
                assert f"{1 + REDRAWS} sharing 50% or more" in exc.reason and "knows" not in exc.reason, exc.reason
                break
            chunks = frozenset(sub.chunk_ids)
            assert all(len(chunks & old) < 0.5 * len(chunks) for old in declined)
            declined.add(chunks)
            drawn += 1
        assert drawn >= 2, cell.key
    assert near(frozenset("ab"), {frozenset("bc")}) and not near(frozenset("abc"), {frozenset("cd")})
    assert not near(frozenset(), {frozenset("a")})


def test_refused_answers_leave_the_pools_without_reloading_the_index(world):
    """A row in refused_answers keeps the answer out of every fixed-answer pool from the next
    load on, without a reload of the index; a `forgotten` row lets it back in."""
    from factory.graph.selectors.chain import answer_pool
    from factory.store.refused import forget

    index = SelectionIndex.load(world, "en")
    people = set(answer_pool(index, frozenset({"person"}), SMALL))
    key = index.ent_keys[sorted(people)[0]]
    world.append("refused_answers", [{"lang": "en", "entity_key": key, "name": key, "cell": "chain/direct/person",
                                      "reason": "closed_book_solved", "note": "", "candidate_id": "c", "draft_id": "c-a0",
                                      "run_id": "r"}])
    again = SelectionIndex.load(world, "en")
    assert again is index and index.key_index(key) in index.refused
    assert set(answer_pool(index, frozenset({"person"}), SMALL)) == people - {index.key_index(key)}
    assert set(answer_pool(index, frozenset({"person"}), SMALL.model_copy(update={"avoid_refused": False}))) == people
    assert forget(world, "en", [key, "nobody"]) == 1
    assert not SelectionIndex.load(world, "en").refused
    assert set(answer_pool(index, frozenset({"person"}), SMALL)) == people
    assert not [n for n in index._pools if n[:1] == ("answer",) and n[-1]]  # no pool for a stale set is kept


def test_intersection(world):
    held = chunk_mentions(world)
    cell = Cell(mechanic="intersection", form="descriptive", answer_type="person")
    sub = select_subgraph(world, cell, "en", random.Random(1), params=SMALL, taxonomy=TAX)
    assert len(sub.chunk_ids) == 2 and len({doc_of(c) for c in sub.chunk_ids}) == 2
    assert all(sub.answer_entity in held[c] for c in sub.chunk_ids)
    assert [c in held[ch] for c, ch in zip(sub.constraint_entities, sub.chunk_ids)] == [True, True]
    assert len(set(sub.constraint_entities)) == 2 and sub.answer_entity not in sub.constraint_entities
    # read alone, each chunk leaves a choice: another person stands beside the answer
    ix = SelectionIndex.load(world, "en")
    for chunk in sub.chunk_ids:
        c = ix.chunk_ids.index(chunk)
        assert any(e != ix.key_index(sub.answer_entity) and ix.ent_label[e] == "person" for e in ix.chunk_ents[c])


def test_temporal_chunks_all_carry_dates(world):
    cell = Cell(mechanic="temporal", form="direct", answer_type="date")
    labels = {(r["chunk_id"], r["label"]) for r in world.query("SELECT chunk_id, label FROM mentions")}
    for seed in range(10):
        sub = select_subgraph(world, cell, "en", random.Random(seed), params=SMALL, taxonomy=TAX)
        assert all((c, "date") in labels for c in sub.chunk_ids)
        assert all(sub.figures["dates"][c] for c in sub.chunk_ids)
        assert sub.figures["entities"][sub.answer_entity]["label"] == "date"


def test_comparison_candidates(world):
    held = chunk_mentions(world)
    cell = Cell(mechanic="comparison", form="direct", answer_type="person")
    n = TAX.mechanics["comparison"].params["candidates"]
    # England (8 documents) is the one group here with three people of one kind: poets
    sub = select_subgraph(world, cell, "en", random.Random(2), params=SMALL.model_copy(update={"bridge_max_df": 8}),
                          taxonomy=TAX)
    group = sub.constraint_entities[0]
    assert len(sub.bridge_entities) == n and sub.answer_entity is None
    kind = sub.figures["value_kind"]
    for cand in sub.bridge_entities:
        assert sub.figures["values"][cand], "each candidate has a value to compare"
        assert any(group in held[c] and cand in held[c] for c in held), "each candidate belongs to the group"
        assert any(cand in held[c] for c in sub.chunk_ids)
    labels = {(r["chunk_id"], r["label"]) for r in world.query("SELECT chunk_id, label FROM mentions")}
    candidate_chunks = [c for c, role in sub.roles.items() if role == "candidate"]
    assert len(candidate_chunks) == n and all((c, kind) in labels for c in candidate_chunks)
    # every title here is an entity, so each value comes from the candidate's own article
    ix = SelectionIndex.load(world, "en")
    assert sorted(ix.ent_keys[ix.about(ix.chunk_ids.index(c))] for c in candidate_chunks) == sorted(sub.bridge_entities)
    assert len({doc_of(c) for c in sub.chunk_ids}) == len(sub.chunk_ids)
    # of one kind by their articles' first sentences: the ironmaster is not compared with poets
    assert sorted(sub.bridge_entities) == ["ada brisk", "maren oswick", "tobias fenn"]
    assert {ix.category(ix.key_index(e)) for e in sub.bridge_entities} == {"poet"}


def test_comparison_needs_things_of_one_kind(world):
    """With Oswick a novelist, England's people are two poets, a novelist and an ironmaster:
    no three of one kind, so no comparison (NER calls all four persons)."""
    from factory.graph.category import category

    assert category("Maren Oswick (born 1952) is an English novelist who grew up", "en") == "novelist"
    assert category("Serbia, officially the Republic of Serbia, is a landlocked country in Europe.", "en") == "country"
    assert category("Prague is the capital and largest city of the Czech Republic.", "en") == "city"
    assert category("Ключевск — посёлок городского типа на Соломе.", "ru") == "посёлок"
    assert category("Hymenoptera is a group of insects.", "en") is None  # the head is after "of"
    ix = SelectionIndex.load(world, "en")
    ix.categories[ix.key_index("maren oswick")] = "novelist"
    cell = Cell(mechanic="comparison", form="direct", answer_type="person")
    with pytest.raises(NoSubgraph, match="of one kind"):
        select_subgraph(ix, cell, "en", random.Random(2), params=SMALL.model_copy(update={"bridge_max_df": 8}),
                        taxonomy=TAX)


def test_no_comparison_without_articles(store):
    """News: the values near a name are those of events, so comparison is refused outright."""
    write_world(store, [(doc, "", text, ents) for doc, _title, text, ents in WORLD_EN], "en")
    ix = SelectionIndex.load(store, "en")
    assert ix.about_coverage() == 0
    cell = Cell(mechanic="comparison", form="direct", answer_type="person")
    with pytest.raises(NoSubgraph, match="not articles") as err:
        select_subgraph(ix, cell, "en", random.Random(2), params=SMALL, taxonomy=TAX)
    assert err.value.structural


def test_a_bridge_names_one_kind_of_thing(store):
    """A name NER reads as a club in one text and a city in another links nothing."""
    world = [list(doc) for doc in WORLD_EN]
    for doc in world:
        if doc[0] == "fenn":
            doc[3] = [(s, "organization" if s == "Dunmere" else lab) for s, lab in doc[3]]
    write_world(store, [tuple(d) for d in world], "en")
    ix = SelectionIndex.load(store, "en")
    dunmere = ix.key_index("dunmere")
    fenn, ashkel = ix.chunk_ids.index("fenn_0"), ix.chunk_ids.index("ashkel_0")
    assert ix.sense(fenn, dunmere) == "organization" and ix.sense(ashkel, dunmere) == "location"
    assert not ix.same_sense(dunmere, fenn, ashkel)
    for cell in TAX.cells("en"):
        if cell.mechanic not in ("chain", "temporal", "calculation"):
            continue
        for sub in drawn(ix, cell, 4):
            for (left, right), bridge in zip(zip(sub.chunk_ids, sub.chunk_ids[1:]), sub.bridge_entities):
                if bridge == "dunmere":
                    assert "fenn_0" not in (left, right)


def test_calculation_operands(world):
    held = chunk_mentions(world)
    cell = Cell(mechanic="calculation", form="direct", answer_type="number")
    for seed in range(10):
        sub = select_subgraph(world, cell, "en", random.Random(seed), params=SMALL, taxonomy=TAX)
        operands = sub.figures["operands"]
        assert [o["chunk_id"] for o in operands] == sub.chunk_ids
        assert len({o["value"] for o in operands}) == 2
        bridge = sub.bridge_entities[0]
        assert all(bridge in held[c] for c in sub.chunk_ids)


def test_impossible_cells_say_why(world):
    # each work occurs in one document only: no intersection can end in a work
    with pytest.raises(NoSubgraph) as info:
        select_subgraph(world, Cell(mechanic="intersection", form="direct", answer_type="work"), "en",
                        random.Random(0), params=SMALL, taxonomy=TAX)
    assert info.value.structural and "work" in info.value.reason
    cells = [Cell(mechanic="intersection", form="direct", answer_type="work"),
             Cell(mechanic="chain", form="direct", answer_type="person")]
    assert list(unsupported_cells(world, cells, "en", taxonomy=TAX, params=SMALL)) == ["intersection/direct/work"]


def test_empty_store_is_structural(store):
    with pytest.raises(NoSubgraph) as info:
        select_subgraph(store, Cell(mechanic="chain", form="direct", answer_type="person"), "en", random.Random(0))
    assert info.value.structural


def test_russian_chain_uses_lemma_keys(world):
    held = chunk_mentions(world)
    cell = Cell(mechanic="chain", form="direct", answer_type="date")
    ix = SelectionIndex.load(world, "ru")
    assert set(ix.chunk_ids) == {f"{d[0]}_0" for d in WORLD_RU}
    sub = select_subgraph(ix, cell, "ru", random.Random(3), params=SMALL, taxonomy=TAX)
    ids = sub.chunk_ids
    assert all(sub.bridge_entities[0] in held[c] for c in ids)
    # the inflected "Санкт-Петербурге" counts as the same entity as "Санкт-Петербург"
    spb = ix.key_index("санкт-петербург")
    assert spb is not None and ix.ent_df[spb] == 4
    assert "Санкт-Петербурге" in ix.ent_aliases[spb]


def test_index_reloads_after_new_rows(world):
    first = SelectionIndex.load(world, "en")
    assert SelectionIndex.load(world, "en") is first
    write_world(world, [("extra", "Extra", "Ada Brisk visited Lake Tessaly in 2001.",
                         [("Ada Brisk", "person"), ("Lake Tessaly", "location"), ("2001", "date")])], "en")
    second = SelectionIndex.load(world, "en")
    assert second is not first and "extra_0" in second.chunk_ids


def test_selection_over_computed_statistics(world):
    """With the statistics step's chunk_entities in place, the index reads them (folded keys)."""
    from factory.graph.stats import compute_statistics

    rows = world.query("SELECT chunk_id, content_hash, lang FROM chunks")
    world.append("annotated_chunks", [dict(r, n_mentions=1, run_id="t") for r in rows])
    compute_statistics(world, "t")
    ix = SelectionIndex.load(world, "en")
    assert ix.source == "chunk_entities"
    held = chunk_mentions(world)
    cell = Cell(mechanic="chain", form="direct", answer_type="person")
    sub = select_subgraph(ix, cell, "en", random.Random(0), params=SMALL, taxonomy=TAX)
    bridge = sub.bridge_entities[0]
    assert all(bridge in held[c] for c in sub.chunk_ids)
    spb = SelectionIndex.load(world, "ru")
    assert spb.source == "chunk_entities" and spb.ent_df[spb.key_index("санкт-петербург")] == 4


def test_about_links_and_related_names(world):
    ix = SelectionIndex.load(world, "en")
    carrow = ix.key_index("edmund carrow")
    chunk = ix.chunk_ids.index("carrow_0")
    assert ix.about(chunk) == carrow, "the chunk of the article titled 'Edmund Carrow' is about him"
    assert ix.about(ix.chunk_ids.index("corrin_0")) == -1, "'other' (the prize) is not a named subject here"
    assert ix.related(ix.key_index("dunmere"), ix.key_index("dunmere lighthouse"))
    assert not ix.related(ix.key_index("dunmere"), ix.key_index("vellmoor"))
    assert ix.good_value(ix.key_index("1834")) and ix.good_value(ix.key_index("3,400"))


def test_related_names_compare_lemmas_where_the_stemmer_splits_one_name(world):
    # the stemmer cuts 'Сергиев' to 'серг' and 'Сергиева' to 'сергиев'; two entities the
    # normaliser kept apart must still count as one name (draw 5 named one and hid the other)
    ix = SelectionIndex.load(world, "ru")
    a, b, other = 0, 1, 2
    ix.ent_name[a], ix.ent_aliases[a] = "Сергиев Посад", []
    ix.ent_name[b], ix.ent_aliases[b] = "Сергиева Посада", ["Сергиевом Посаде"]
    ix.ent_name[other], ix.ent_aliases[other] = "Павловский Посад", []
    for e in (a, b, other):
        ix.ent_label[e] = "location"
    ix.memo.clear()
    assert ix.related(a, b)
    assert not ix.related(a, other)


def test_chains_prefer_article_hops_and_never_hide_a_namesake(world):
    cell = Cell(mechanic="chain", form="direct", answer_type="place")
    links = []
    for sub in drawn(world, cell, 15):
        names = {k: v["name"].casefold() for k, v in sub.figures["entities"].items()}
        answer = names[sub.answer_entity]
        for other in [*sub.bridge_entities, sub.figures["start_entity"]]:
            assert answer not in names[other] and names[other] not in answer  # e.g. Dunmere / Dunmere Lighthouse
        links.append(sub.figures["about_links"])
    assert links and sum(1 for n in links if n >= 1) >= len(links) * 0.8, links


def test_a_cited_source_links_and_answers_nothing(store):
    """An organisation a text cites as its source is not what the text is about."""
    world = [list(doc) for doc in WORLD_EN]
    for doc in world:
        if doc[0] == "tessaly":
            doc[2] = doc[2] + " Its ferries carried 40,000 people last year, according to the Harbour Trust."
    write_world(store, [tuple(d) for d in world], "en")
    ix = SelectionIndex.load(store, "en")
    trust = ix.key_index("harbour trust")
    tessaly, dunmere = ix.chunk_ids.index("tessaly_0"), ix.chunk_ids.index("dunmere_0")
    assert ix.sense(tessaly, trust) == "source" and ix.plain(dunmere, trust)
    assert not ix.same_sense(trust, tessaly, dunmere) and not ix.same_sense(trust, tessaly, tessaly)


def test_an_award_tagged_as_a_work_is_no_work_answer(store):
    """spaCy tags awards as WORK_OF_ART: 'Corrin Prize' read so is still no title of a work, nor
    is its stem alone ('Corrin laureates', as 'Nobel' of 'Nobel laureate'), though poems are near."""
    from factory.graph.selectors.chain import answer_pool

    world = [list(doc) for doc in WORLD_EN]
    for doc in world:
        doc[3] = [(s, "work" if s == "Corrin Prize" else lab) for s, lab in doc[3]]
    world.append(["laureates", "Corrin laureates", "The Corrin laureates read their poems at Dunmere in 2001.",
                  [("Corrin", "work"), ("Dunmere", "location"), ("2001", "date")]])
    write_world(store, [tuple(d) for d in world], "en")
    ix = SelectionIndex.load(store, "en")
    assert ix.ent_label[ix.key_index("corrin prize")] == "work" and ix.attested(ix.key_index("corrin"))
    works = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"work"}), SMALL)}
    assert "the salt ledger" in works and "corrin prize" not in works and "corrin" not in works


def test_a_bare_name_two_persons_bear_links_nothing(store):
    """A chunk whose document calls a person by one word that two full names of the corpus hold
    (Барак: Эхуд Барак and Барак Обама) does not say which bearer it means: no hop, no clue, no
    answer there. A word only one full name holds stays theirs."""
    from factory.graph.stats import compute_statistics

    world = [list(doc) for doc in WORLD_EN]
    for doc in world:
        if doc[0] == "tessaly":
            doc[2] += " Fenn swam across it in 1950, and Brisk rowed it in 1999."
            doc[3] = [*doc[3], ("Fenn", "person"), ("Brisk", "person"), ("1950", "date"), ("1999", "date")]
        if doc[0] in ("fenn", "brisk"):  # the surname meets its full name, so the identity step joins them
            doc[3] = [*doc[3], (doc[1].split()[-1], "person")]
    world.append(("halloway", "Fenn Halloway", "Fenn Halloway (born 1960) is a painter from Vellmoor.",
                  [("Fenn Halloway", "person"), ("1960", "date"), ("Vellmoor", "location")]))
    write_world(store, [tuple(d) for d in world], "en")
    rows = store.query("SELECT chunk_id, content_hash, lang FROM chunks")
    store.append("annotated_chunks", [dict(r, n_mentions=1, run_id="t") for r in rows])
    compute_statistics(store, "t")
    ix = SelectionIndex.load(store, "en")
    tessaly, own = ix.chunk_ids.index("tessaly_0"), ix.chunk_ids.index("fenn_0")
    fenn, ada = ix.key_index("tobias fenn"), ix.key_index("ada brisk")
    assert tessaly in ix.ent_chunks[fenn] and tessaly in ix.ent_chunks[ada]  # the identity step joined both
    assert ix.sense(tessaly, fenn) == "bare name" and not ix.plain(tessaly, fenn)
    assert ix.plain(own, fenn) and not ix.same_sense(fenn, tessaly, own)
    assert ix.plain(tessaly, ada) and ix.same_sense(ada, tessaly, ix.chunk_ids.index("brisk_0"))


@pytest.mark.parametrize("split", [0, 1])
def test_a_name_ner_reads_as_two_kinds_is_no_typed_answer(store, split):
    """'Mozambique' an organisation in 9 chunks and a place in 8: which kind it is, is a coin
    toss, so no cell asking for either gets it as its answer. One chunk in three suffices."""
    from factory.graph.selectors.chain import answer_pool

    world = [list(doc) for doc in WORLD_EN]
    for doc in world:
        if doc[0] == "tessaly" and split:
            doc[3] = [(s, "location" if s == "Harbour Trust" else lab) for s, lab in doc[3]]
    write_world(store, [tuple(d) for d in world], "en")
    ix = SelectionIndex.load(store, "en")
    trust = ix.key_index("harbour trust")
    assert len(ix.ent_chunks[trust]) == 3 and ix.ent_label[trust] == "organization"
    assert ix.label_in_doubt(trust) == bool(split)
    orgs = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"organization"}), SMALL)}
    assert ("harbour trust" in orgs) != bool(split) and "corrin society" in orgs


def test_a_work_the_text_never_calls_one_is_no_work_answer(store):
    """spaCy tags epithets, regions and peoples as works ('Peter the Great of Turkey', the Alchon
    Huns): a `work` answer needs a word for a work near a mention ('Her novel The Salt Ledger')
    or a name that is one ('the Vellmoor Charter'); a nickname's cue ('known as') makes it none."""
    from factory.graph.selectors.chain import answer_pool

    extra = [
        ("orrin", "Orrin Uplands",
         "Ilse Vantongeren crossed the Orrin Uplands in 1870. Her guide was Tobin Marl, known as the Grey Walker, "
         "and the council later sealed the Vellmoor Charter.",
         [("Ilse Vantongeren", "person"), ("the Orrin Uplands", "work"), ("1870", "date"), ("Tobin Marl", "person"),
          ("the Grey Walker", "work"), ("the Vellmoor Charter", "work")]),
    ]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    works = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"work"}), SMALL)}
    assert works == {"the salt ledger", "lanterns", "the glass ferry", "the vellmoor charter"}
    assert not ix.attested(ix.key_index("the grey walker")) and ix.attested(ix.key_index("tobin marl"))


def test_a_census_year_is_no_event_to_compute_with(store):
    """'As of the 2021 census it had 210,000 inhabitants' dates a figure, not something that
    happened: a calculation offers the chunk's other date (1788) as its operand instead."""
    dunmere = ("dunmere", "Dunmere",
               "Dunmere is a port city in England at the mouth of the River Ashkel. As of the 2021 census it had "
               "210,000 inhabitants. The Dunmere Lighthouse was built in 1788 by the Harbour Trust.",
               [("Dunmere", "location"), ("England", "location"), ("River Ashkel", "location"), ("2021", "date"),
                ("210,000", "number"), ("Dunmere Lighthouse", "other"), ("1788", "date"),
                ("Harbour Trust", "organization")])
    write_world(store, [dunmere if doc[0] == "dunmere" else doc for doc in WORLD_EN], "en")
    ix = SelectionIndex.load(store, "en")
    c = ix.chunk_ids.index("dunmere_0")
    dates = ix.values(c, {"date"}, as_of=True)
    assert {ix.ent_name[e] for e in dates} == {"2021", "1788"}
    assert [ix.ent_name[e] for e in ix.events(c, dates)] == ["1788"]
    assert [ix.ent_name[e] for e in ix.values(c, {"date"})] == ["1788"]
    cell = Cell(mechanic="calculation", form="direct", answer_type="number")
    offered = []
    for sub in drawn(store, cell, 40):
        offered += [o["value"] for o in sub.figures["operands"] if o["chunk_id"] == "dunmere_0"]
    assert offered and "2021" not in offered


def test_a_polity_tagged_as_an_organisation_is_no_organisation_answer(store):
    """spaCy tags states and dynasties as ORG: 'the Emirate of Tessaly' is no organisation, while
    'the Tessaly State Council' (whose head is 'Council') and the Harbour Trust are."""
    from factory.graph.selectors.chain import answer_pool

    extra = [("emirate", "Tessaly emirs",
              "The Emirate of Tessaly ruled the lake shore until 1790; the Tessaly State Council met at Dunmere.",
              [("The Emirate of Tessaly", "organization"), ("1790", "date"), ("the Tessaly State Council", "organization"),
               ("Dunmere", "location")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    orgs = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"organization"}), SMALL)}
    assert "the emirate of tessaly" not in orgs
    assert {"the tessaly state council", "harbour trust"} <= orgs


def test_an_organisation_the_text_never_calls_one_is_no_organisation_answer(store):
    """spaCy tags regions, peoples and surnames as ORG ('Swabia', 'Mellon'): an `organization`
    answer needs a word for one near a mention ('founded Marl Brothers') or a name that is one
    ('the Tessaly Ferry Company')."""
    from factory.graph.selectors.chain import answer_pool

    extra = [("uplands", "Orrin Uplands",
              "Walkers cross the Orrin Uplands each spring along the old drovers' path, high above the quiet "
              "western shore of the lake. Tobin Marl founded Marl Brothers at Dunmere in 1871, and "
              "the Tessaly Ferry Company still sails the lake.",
              [("the Orrin Uplands", "organization"), ("Tobin Marl", "person"), ("Marl Brothers", "organization"),
               ("Dunmere", "location"), ("1871", "date"), ("the Tessaly Ferry Company", "organization")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    orgs = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"organization"}), SMALL)}
    assert "the orrin uplands" not in orgs
    assert {"marl brothers", "the tessaly ferry company", "harbour trust"} <= orgs


def test_a_place_tagged_as_a_person_is_no_person_answer(store):
    """spaCy tags two capitalised words as PERSON whatever they name ('Morne Diablotins'): a
    `person` answer the text puts among places or things, and never among people, is none; a
    person listed without any cue stays one."""
    from factory.graph.selectors.chain import answer_pool

    extra = [("tabret", "Isle of Tabret",
              "The Isle of Tabret lies west of Dunmere. The highest point of the island is Morne Caldre, at "
              "1,200 m, and the offshore islands Nusa Orrin and Nusa Pell shelter its harbour. The guild's first "
              "members were Ada Lusk, Berin Hale and Cora Fenn. Tobin Marl, who was born on the island, mapped it.",
              [("Isle of Tabret", "location"), ("Dunmere", "location"), ("Morne Caldre", "person"),
               ("Nusa Orrin", "person"), ("Nusa Pell", "person"), ("Ada Lusk", "person"), ("Berin Hale", "person"),
               ("Cora Fenn", "person"), ("Tobin Marl", "person")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    persons = {ix.ent_keys[e] for e in answer_pool(ix, frozenset({"person"}), SMALL)}
    assert not {"morne caldre", "nusa orrin", "nusa pell"} & persons
    assert {"ada lusk", "berin hale", "cora fenn", "tobin marl", "edmund carrow"} <= persons


def test_an_article_names_its_subject_in_full_before_its_verb(store):
    """'Orla Maren Venn was a poet' in the article 'Orla Venn': the full name is the article's
    subject (so no answer where article subjects are none); a name that lacks a word of the title
    ('Venn diagram') is not."""
    extra = [("venn", "Orla Venn",
              "Orla Maren Venn was a poet born in Dunmere. Her first book appeared in 1902.",
              [("Orla Maren Venn", "person"), ("Dunmere", "location"), ("1902", "date")]),
             ("diagram", "Venn diagram (logic)",
              "A Venn diagram, drawn by Tobin Marl Venn in 1881, is a figure of overlapping circles.",
              [("Tobin Marl Venn", "person"), ("1881", "date")]),
             ("poets", "Poets of Dunmere",
              "Dunmere's poets include Orla Maren Venn, who wrote of the harbour, and Tobin Marl Venn.",
              [("Dunmere", "location"), ("Orla Maren Venn", "person"), ("Tobin Marl Venn", "person")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    orla, tobin = ix.key_index("orla maren venn"), ix.key_index("tobin marl venn")
    chunk = ix.chunk_ids.index
    assert ix.about(chunk("venn_0")) == orla and ix.about(chunk("poets_0")) == -1
    assert ix.about(chunk("diagram_0")) == -1
    persons = encyclopedia_persons(ix)
    assert orla not in persons and tobin in persons


def test_an_article_s_title_makes_its_subject_no_answer_where_ner_missed_it_there(store):
    """NER often misses a lead's own subject ('Pablo Ruiz Picasso (1881-1973) was'): the entity
    other articles name 'Orla Venn' still has an article of its own, titled so."""
    extra = [("venn", "Orla Venn",
              "Orla Maren Venn (1870-1931) was a poet born in Dunmere. Her first book appeared in 1902.",
              [("Dunmere", "location"), ("1902", "date")]),
             ("poets", "Poets of Dunmere",
              "Dunmere's poets include Orla Venn, who wrote of the harbour, and Tobin Marl.",
              [("Dunmere", "location"), ("Orla Venn", "person"), ("Tobin Marl", "person")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    orla, tobin = ix.key_index("orla venn"), ix.key_index("tobin marl")
    assert ix.about(ix.chunk_ids.index("venn_0")) == -1, "NER found no subject in the article itself"
    assert orla in ix.article_subjects() and tobin not in ix.article_subjects()
    persons = encyclopedia_persons(ix)
    assert orla not in persons and tobin in persons


@pytest.mark.parametrize("sentence,year", [
    ("Dunmere had 1.45 million people (2020) and a harbour built in 1788.", "2020"),
    ("Dunmere's population was estimated at over 1.2 million in 2026; its harbour was built in 1788.", "2026"),
    ("In 2022, the town's population was about 210,000. Its harbour was built in 1788.", "2022"),
    ("Dunmere had 372,624 residents in 2020. Its harbour was built in 1788.", "2020"),
])
def test_a_figure_s_year_dates_nothing_to_order_or_compare(store, sentence, year):
    """A year a head count is given for is no date of an event ('1.45 million people (2020)'): a
    temporal chain or a comparison never rests on it, while the harbour's 1788 still counts and a
    calculation may still compute with the figure it dates (``as_of``)."""
    dunmere = ("dunmere", "Dunmere", f"Dunmere is a port city in England. {sentence}",
               [("Dunmere", "location"), ("England", "location"), (year, "date"), ("1788", "date")])
    write_world(store, [dunmere if doc[0] == "dunmere" else doc for doc in WORLD_EN], "en")
    ix = SelectionIndex.load(store, "en")
    c = ix.chunk_ids.index("dunmere_0")
    assert [ix.ent_name[e] for e in ix.values(c, {"date"})] == ["1788"]
    assert {ix.ent_name[e] for e in ix.values(c, {"date"}, as_of=True)} == {year, "1788"}


def test_a_date_beside_a_bare_number_is_still_an_event(store):
    """'Apollo 11 (1969)': a number that counts no one does not make the year a figure's."""
    dunmere = ("dunmere", "Dunmere", "Dunmere is a port city in England. Its Pier 4 (1902) still stands.",
               [("Dunmere", "location"), ("England", "location"), ("1902", "date")])
    write_world(store, [dunmere if doc[0] == "dunmere" else doc for doc in WORLD_EN], "en")
    ix = SelectionIndex.load(store, "en")
    assert [ix.ent_name[e] for e in ix.values(ix.chunk_ids.index("dunmere_0"), {"date"})] == ["1902"]


def test_an_acronym_is_related_to_the_name_it_abbreviates(store):
    """Draw 10 (rewritten), en-025: a chain named its start 'British Broadcasting Company' and
    hid its bridge 'BBC'; naming one gives the other away."""
    extra = [("dht", "Dunmere Harbour Trust",
              "The Dunmere Harbour Trust (DHT) has run the ferries of Lake Tessaly since 1903. The DHT is based in "
              "Dunmere.",
              [("Dunmere Harbour Trust", "organization"), ("DHT", "organization"), ("Lake Tessaly", "location"),
               ("1903", "date"), ("Dunmere", "location")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    trust, dht, lake = ix.key_index("dunmere harbour trust"), ix.key_index("dht"), ix.key_index("lake tessaly")
    assert ix.related(trust, dht) and ix.related(dht, trust)
    assert not ix.related(dht, lake)


def test_the_selection_rules_bench_names_the_rule_that_drops_a_labelled_subgraph(store):
    """bench.selection_rules replays the selectors' rules on labelled reference rows: a temporal
    chain whose chunk dates only a head count is dropped as 'dated', the same chain on an event
    date is kept, and an answer that names another kind is dropped as 'kind'."""
    from bench.selection_rules import first_refusal

    census = ("dunmere", "Dunmere", "Dunmere is a port city in England. It had 1.45 million people (2020).",
              [("Dunmere", "location"), ("England", "location"), ("2020", "date")])
    dynasty = ("orrin", "Orrin kings", "The Orrin dynasty ruled Vellmoor from 1402 to 1560.",
               [("The Orrin dynasty", "event"), ("Vellmoor", "location"), ("1402", "date"), ("1560", "date")])
    write_world(store, [census if doc[0] == "dunmere" else doc for doc in WORLD_EN] + [dynasty], "en")
    ix = SelectionIndex.load(store, "en")

    def row(cell: str, chunks: list[str], answer: str | None) -> dict:
        return {"cell": cell, "subgraph": {"chunk_ids": chunks, "answer_entity": answer, "bridge_entities": [],
                                           "constraint_entities": [], "roles": {},
                                           "figures": {"selector": cell.split("/")[0]}}}

    assert first_refusal(ix, row("temporal/direct/place", ["dunmere_0", "vellmoor_0"], "england")) == "dated"
    assert first_refusal(ix, row("temporal/direct/place", ["carrow_0", "vellmoor_0"], "england")) is None
    assert first_refusal(ix, row("chain/direct/organisation", ["carrow_0", "vellmoor_0"], "parliament of england")) \
        is None
    assert first_refusal(ix, row("chain/direct/other", ["vellmoor_0", "orrin_0"], "the orrin dynasty")) == "kind"


def test_a_name_ner_cut_out_of_a_longer_one_is_no_answer(store):
    """Draw 11 and 12 writers refused 'Jean Léopold' (of Cuvier's five given names) and 'Portuguese
    War' (of the Spanish-Portuguese War): every mention of such an answer runs on into a longer
    name. A possessive ends a name ('Ilse Vantongeren's Harbour Atlas') and is no such run."""
    from factory.graph.selectors.chain import answer_pool

    extra = [("cuvier", "Harbour naturalists",
              "Georges Jean Léopold Cuvier studied the fossils of Lake Tessaly; Ilse Vantongeren's Harbour Atlas "
              "drew on them.",
              [("Jean Léopold", "person"), ("Lake Tessaly", "location"), ("Ilse Vantongeren", "person")]),
             ("wars", "Tessaly wars",
              "The Tessaly-Orrin War of 1801 ended at Dunmere; the Harbour Mutiny followed in 1803.",
              [("Orrin War", "event"), ("1801", "date"), ("Dunmere", "location"), ("the Harbour Mutiny", "event"),
               ("1803", "date")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    key = ix.key_index
    assert {key("jean léopold"), key("orrin war")} <= ix.fragments
    assert not {key("ilse vantongeren"), key("the harbour mutiny"), key("tobin marl")} & ix.fragments
    persons = set(answer_pool(ix, frozenset({"person"}), SMALL))
    events = set(answer_pool(ix, frozenset({"event"}), SMALL))
    assert key("jean léopold") not in persons and key("ilse vantongeren") in persons
    assert key("orrin war") not in events and key("the harbour mutiny") in events


def test_an_answer_its_passage_only_lists_ends_no_chain(store):
    """Reference writers refused chains ending in 'Sebastian Faulks' (one of nine Bond authors a
    passage lists) or 'Енисейск' beside five other towns: the last passage says nothing of the
    answer alone. A list of three names marks it, whatever kinds NER gave them; two names do not,
    nor do dates beside names."""
    from bench.selection_rules import first_refusal
    from factory.graph.selectors.chain import answer_pool

    extra = [("medal", "Orrin Medal",
              "The Orrin Medal went to Ada Brisk, Ilse Marl and Tobias Fenn in 1999. Ada Brisk and Nell Ormond "
              "shared its first jury; Edmund Carrow, Dunmere and Maren Oswick are named on its plaque. "
              "In 1834, 1841 and 1903 Lake Tessaly froze.",
              [("Orrin Medal", "other"), ("Ada Brisk", "person"), ("Ilse Marl", "person"), ("Tobias Fenn", "person"),
               ("1999", "date"), ("Nell Ormond", "person"), ("Edmund Carrow", "person"), ("Dunmere", "location"),
               ("Maren Oswick", "person"), ("1834", "date"), ("1841", "date"), ("1903", "date"),
               ("Lake Tessaly", "location")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    key, medal = ix.key_index, ix.chunk_ids.index("medal_0")
    assert not ix.singled_out(medal, key("ilse marl")) and not ix.singled_out(medal, key("tobias fenn"))
    # 'Ada Brisk' also stands alone in a pair; the plaque lists a place among persons; dates list no name
    assert ix.singled_out(medal, key("ada brisk")) and ix.singled_out(medal, key("nell ormond"))
    assert not ix.singled_out(medal, key("dunmere")) and not ix.singled_out(medal, key("maren oswick"))
    assert ix.singled_out(medal, key("lake tessaly")) and ix.singled_out(medal, key("1903"))
    assert ix.singled_out(ix.chunk_ids.index("fenn_0"), key("tobias fenn"))
    assert key("ilse marl") in answer_pool(ix, frozenset({"person"}), SMALL)  # only the list rule keeps her out
    row = {"cell": "chain/direct/person",
           "subgraph": {"chunk_ids": ["brisk_0", "medal_0"], "answer_entity": "ilse marl",
                        "bridge_entities": ["ada brisk"], "constraint_entities": ["vellmoor"],
                        "roles": {"brisk_0": "start", "medal_0": "answer"}, "figures": {"selector": "chain"}}}
    assert first_refusal(ix, row) == "listed"  # bench.selection_rules names the rule
    cell = Cell(mechanic="chain", form="direct", answer_type="person")
    answers = set()
    for sub in drawn(ix, cell, 60):
        answers.add(sub.answer_entity)
        assert sub.answer_entity != "ilse marl"
        assert not (sub.answer_entity == "tobias fenn" and sub.chunk_ids[-1] == "medal_0")
    assert len(answers) >= 3


def test_an_intersection_clue_never_meets_its_answer_in_another_document(store):
    """Writers refused intersections whose clue alone gives the answer because another document
    says the two together ('Kant' and Königsberg, 'Jiangsu' and Anhui). Here a jury's note names
    Tobias Fenn beside the Corrin Society, which the prize's article names beside him too: as his
    clue there the society would meet him twice."""
    from factory.graph.selectors.intersection import _meets_only_in

    extra = [("jury", "Corrin jury",
              "In 1975 Tobias Fenn chaired the jury of the Corrin Society, with Ada Brisk and Nell Ormond.",
              [("1975", "date"), ("Tobias Fenn", "person"), ("Corrin Society", "organization"), ("Ada Brisk", "person"),
               ("Nell Ormond", "person")])]
    write_world(store, WORLD_EN + extra, "en")
    ix = SelectionIndex.load(store, "en")
    key, fenn = ix.key_index, ix.chunk_ids.index("fenn_0")
    assert not _meets_only_in(ix, key("corrin prize"), key("tobias fenn"), fenn)
    assert not _meets_only_in(ix, key("corrin society"), key("tobias fenn"), ix.chunk_ids.index("jury_0"))
    assert _meets_only_in(ix, key("harbour trust"), key("tobias fenn"), fenn)
    cell = Cell(mechanic="intersection", form="direct", answer_type="person")
    subgraphs = drawn(ix, cell, 40)
    for sub in subgraphs:
        answer = key(sub.answer_entity)
        for chunk, clue in zip(sub.chunk_ids, sub.constraint_entities):
            assert _meets_only_in(ix, key(clue), answer, ix.chunk_ids.index(chunk))
    assert subgraphs
