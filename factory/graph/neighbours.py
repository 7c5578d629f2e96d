"""On-demand entity lookups and neighbourhoods over the current statistics generation.

The statistics live in DuckDB tables (``current_entities``, ``current_edges``);
networkx is used only for the small ego graphs built here on request.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from factory.nlp.keys import entity_key as make_key
from factory.nlp.labels import LABELS

_NEIGHBOURS_SQL = """
    SELECT p.key_b AS entity_key, p.lang, p.label_b AS label, e.name, p.chunk_count, p.doc_count,
           p.npmi, e.chunk_freq, e.doc_freq
    FROM current_edges p
    JOIN current_entities e ON e.lang = p.lang AND e.entity_key = p.key_b
    WHERE p.key_a = ? AND (? IS NULL OR p.lang = ?) AND p.npmi >= ? AND p.chunk_count >= ?
      AND (? IS NULL OR e.doc_freq <= ?)
    ORDER BY {order}, p.key_b
    LIMIT ?
"""
_ORDERS = {"npmi": "p.npmi DESC, p.chunk_count DESC", "count": "p.chunk_count DESC, p.npmi DESC"}


def candidate_keys(name: str, lang: str) -> list[str]:
    """Keys a typed name may have: label-free, and with each label's preferences."""
    keys = [make_key(name, lang)]
    for label in LABELS:
        key = make_key(name, lang, label)
        if key and key not in keys:
            keys.append(key)
    return keys


def find_entity(store, name: str, lang: str | None = None) -> list[dict[str, Any]]:
    """Current entities a name refers to, most documents first, each with ``match``:

    ``key`` (the name's key is the entity's key), ``link`` (the identity step linked the
    name's key to the entity: "Путина" finds «Владимир Путин»), ``surname`` (a one-word
    name is the last word of a person's key), ``form`` (the name is one of the entity's
    surface forms) or ``alias`` (an alias link). Empty when nothing matches (see
    ``suggest_entities``).
    """
    langs = [lang] if lang else ["en", "ru"]
    keys = sorted({k for code in langs for k in candidate_keys(name, code) if k})
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    lang_filter = "AND e.lang = ?" if lang else ""
    lang_params = [lang] if lang else []
    single = [k for k in keys if " " not in k]
    surname = (
        "OR (e.label = 'person' AND list_has_any(?::VARCHAR[], [string_split(e.entity_key, ' ')[-1]]) "
        "AND contains(e.entity_key, ' '))"
        if single else ""
    )
    rows = store.query(
        f"""WITH linked AS (SELECT DISTINCT lang, identity FROM current_entity_links
                            WHERE doc_id IS NULL AND entity_key IN ({marks}))
            SELECT *, CASE WHEN e.entity_key IN ({marks}) THEN 'key'
                           WHEN (e.lang, e.entity_key) IN (SELECT (lang, identity) FROM linked) THEN 'link'
                           ELSE 'surname' END AS match
            FROM current_entities e
            WHERE (e.entity_key IN ({marks}) OR (e.lang, e.entity_key) IN (SELECT (lang, identity) FROM linked)
                   {surname}) {lang_filter}
            ORDER BY e.doc_freq DESC, e.entity_key""",
        [*keys, *keys, *keys, *([single] if single else []), *lang_params],
    )
    if rows:
        return rows
    rows = store.query(
        f"SELECT *, 'form' AS match FROM current_entities e WHERE list_contains(e.aliases, ?) {lang_filter} "
        "ORDER BY e.doc_freq DESC, e.entity_key",
        [name.strip(), *lang_params],
    )
    if rows:
        return rows
    return store.query(
        f"""SELECT DISTINCT e.*, 'alias' AS match FROM entity_aliases a
            JOIN current_entities e ON e.entity_key = a.entity_key
            WHERE a.alias_key IN ({marks}) {lang_filter}
            ORDER BY e.doc_freq DESC, e.entity_key""",
        [*keys, *lang_params],
    )


def entity_links(store, entity_key: str, lang: str) -> list[dict[str, Any]]:
    """The keys the identity step linked to an entity, one row per key and rule: the rule,
    the evidence (one example where the link holds in single documents), in how many
    documents it holds (NULL: across the corpus) and how many mentions it brought."""
    return store.query(
        """SELECT l.entity_key, l.rule, any_value(l.evidence) AS evidence,
                  count(DISTINCT l.doc_id) FILTER (WHERE l.doc_id IS NOT NULL) AS documents,
                  bool_or(l.doc_id IS NULL) AS corpus,
                  (SELECT count(*) FROM mention_identities m
                   WHERE m.entity_key = l.entity_key AND m.identity = l.identity) AS mentions
           FROM current_entity_links l
           WHERE l.identity = ? AND l.lang = ? AND l.identity <> l.entity_key
           GROUP BY l.entity_key, l.identity, l.rule
           ORDER BY mentions DESC, l.entity_key, l.rule""",
        [entity_key, lang],
    )


def suggest_entities(store, name: str, lang: str | None = None, limit: int = 5) -> list[dict[str, Any]]:
    """Entities whose key is close to the name's key (Jaro-Winkler), for 'did you mean'."""
    langs = [lang] if lang else ["en", "ru"]
    keys = sorted({make_key(name, code) for code in langs} - {""})
    if not keys:
        return []
    best = ", ".join("jaro_winkler_similarity(e.entity_key, ?)" for _ in keys)
    return store.query(
        f"""SELECT * FROM (
                SELECT e.entity_key, e.name, e.label, e.lang, e.doc_freq, greatest({best}) AS similarity
                FROM current_entities e WHERE (? IS NULL OR e.lang = ?))
            WHERE similarity >= 0.8
            ORDER BY similarity DESC, doc_freq DESC, entity_key LIMIT ?""",
        [*keys, lang, lang, limit],
    )


def neighbours(
    store,
    entity_key: str,
    min_npmi: float = 0.0,
    max_df: int | None = None,
    limit: int = 50,
    *,
    lang: str | None = None,
    min_count: int = 1,
    order: str = "npmi",
    con=None,
) -> list[dict[str, Any]]:
    """Entities sharing a chunk with ``entity_key``: NPMI at least ``min_npmi``, the
    neighbour in at most ``max_df`` documents (hubs out), strongest first.

    ``order``: "npmi" (default) or "count" (chunks shared). Each row: entity_key,
    lang, label, name, chunk_count, doc_count, npmi, chunk_freq, doc_freq.
    """
    if order not in _ORDERS:
        raise ValueError(f"order must be one of {sorted(_ORDERS)}")
    sql = _NEIGHBOURS_SQL.format(order=_ORDERS[order])
    params = [entity_key, lang, lang, min_npmi, min_count, max_df, max_df, limit]
    if con is not None:
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
    return store.query(sql, params)


def ego_subgraph(
    store,
    entity_key: str,
    radius: int = 1,
    min_npmi: float = 0.0,
    max_df: int | None = None,
    limit: int = 50,
    *,
    lang: str | None = None,
) -> nx.Graph:
    """The entities within ``radius`` co-occurrence hops of ``entity_key`` (at most
    ``limit`` neighbours per node, strongest by NPMI) and every edge among them.

    Nodes carry label, name, chunk_freq, doc_freq; edges chunk_count, doc_count, npmi.
    """
    graph = nx.Graph()
    con = store.connect()
    try:
        centre = con.execute(
            "SELECT entity_key, lang, label, name, chunk_freq, doc_freq FROM current_entities "
            "WHERE entity_key = ? AND (? IS NULL OR lang = ?) ORDER BY doc_freq DESC LIMIT 1",
            [entity_key, lang, lang],
        ).fetchone()
        if centre is None:
            return graph
        lang = centre[1]
        graph.add_node(centre[0], label=centre[2], name=centre[3], chunk_freq=centre[4], doc_freq=centre[5])
        frontier = [entity_key]
        for _ in range(radius):
            reached: list[str] = []
            for key in frontier:
                for row in neighbours(store, key, min_npmi, max_df, limit, lang=lang, con=con):
                    if row["entity_key"] not in graph:
                        graph.add_node(row["entity_key"], label=row["label"], name=row["name"],
                                       chunk_freq=row["chunk_freq"], doc_freq=row["doc_freq"])
                        reached.append(row["entity_key"])
            frontier = reached
        nodes = list(graph.nodes)
        con.execute("CREATE TEMP TABLE _nodes (k VARCHAR)")
        con.executemany("INSERT INTO _nodes VALUES (?)", [[n] for n in nodes])
        for key_a, key_b, count, docs, npmi in con.execute(
            """SELECT p.key_a, p.key_b, p.chunk_count, p.doc_count, p.npmi FROM current_pairs p
               WHERE p.lang = ? AND p.key_a IN (SELECT k FROM _nodes) AND p.key_b IN (SELECT k FROM _nodes)""",
            [lang],
        ).fetchall():
            graph.add_edge(key_a, key_b, chunk_count=count, doc_count=docs, npmi=npmi)
    finally:
        con.close()
    return graph
