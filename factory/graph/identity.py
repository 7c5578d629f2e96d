"""The corpus identity step: one identity per person, place and organisation.

``compute_statistics`` runs it first (after NER, before the entity statistics), on the
connection that computes the statistics. It reads the current mentions and the corpus's
own alias links and decides which keys name one entity (the rules are in
``identity_rules``):

1. the joins that need no document evidence (name lists, stated aliases, transliteration,
   inflection, middle names, initials);
2. the links that do: an acronym to the one multi-word name it abbreviates among those it
   shares a document with; a surname alone to the full name ending in it, when the corpus
   has exactly one such full name and the two share a document;
3. inside each document, a surname the corpus left open to the one full name ending in it
   in that document («Клинтон» next to «Хиллари Клинтон»; never with two candidates), and
   a surname the corpus linked kept apart where the document names another full name
   ending in it.

It leaves the temporary table ``identities(lang, doc_id, key, identity)`` (``doc_id`` NULL
for links that hold across the corpus) for the statistics and returns the SQL of the
``entity_links`` rows: every linked key with its identity, rule and evidence.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from factory.graph.identity_rules import KeyInfo, candidates, merge_keys, surname_sig
from factory.nlp.ru_names import is_initial

_KEYS_SQL = """
CREATE TEMP TABLE raw AS
    SELECT m.chunk_id, c.doc_id, c.lang, m.text, m.label, m.entity_key AS key
    FROM mentions m JOIN chunks c ON c.chunk_id = m.chunk_id AND c.content_hash = m.content_hash;
CREATE TEMP TABLE dockeys AS
    SELECT DISTINCT lang, doc_id, key FROM raw WHERE label NOT IN ('date', 'number');
CREATE TEMP TABLE key_stats AS
    WITH named AS (SELECT * FROM raw WHERE label NOT IN ('date', 'number')),
    lv AS (SELECT lang, key, label, count(*) AS n FROM named GROUP BY ALL),
    fv AS (SELECT lang, key, text, count(*) AS n FROM named GROUP BY ALL)
    SELECT k.lang, k.key, k.mentions, k.docs, l.label, f.form, k.persons / k.mentions AS person_share
    FROM (SELECT lang, key, count(*) AS mentions, count(DISTINCT doc_id) AS docs,
                 count(*) FILTER (WHERE label = 'person')::DOUBLE AS persons
          FROM named GROUP BY ALL) k
    JOIN (SELECT lang, key, first(label ORDER BY n DESC, label) AS label FROM lv GROUP BY ALL) l USING (lang, key)
    JOIN (SELECT lang, key, first(text ORDER BY n DESC, text) AS form FROM fv GROUP BY ALL) f USING (lang, key);
"""

# documents where a candidate pair (source identity, candidate identity) occurs together
_SUPPORT_SQL = """
SELECT c.lang, c.src, c.dst, c.rule, count(DISTINCT a.doc_id) AS together
FROM cand c
JOIN members ma ON ma.lang = c.lang AND ma.ident = c.src
JOIN dockeys a ON a.lang = c.lang AND a.key = ma.key
JOIN members mb ON mb.lang = c.lang AND mb.ident = c.dst
JOIN dockeys b ON b.lang = c.lang AND b.doc_id = a.doc_id AND b.key = mb.key
GROUP BY ALL
"""

# a surname the corpus left open -> the one full name ending in it in the document; a
# surname the corpus linked stays itself in a document that names another full name
# ending in it, of either gender, and not the linked one (a namesake or a relative:
# «Мартин» next to «Даны Мартина» is not the corpus's «Антонио Мартин»)
_DOC_LINKS_SQL = """
CREATE TEMP TABLE doc_links AS
    WITH p AS (SELECT d.lang, d.doc_id, s.* EXCLUDE (lang) FROM dockeys d JOIN person_sigs s USING (lang, key)),
    f AS (SELECT DISTINCT lang, doc_id, ident, sig, base FROM p WHERE key_kind = 'full'),
    open AS (
        SELECT s.lang, s.doc_id, s.key, min(f.ident) AS identity, 'surname_in_document' AS rule,
               'the one full name ending in «' || any_value(s.sig) || '» in this document' AS evidence
        FROM p s JOIN f ON f.lang = s.lang AND f.doc_id = s.doc_id AND f.sig = s.sig
        WHERE s.key_kind = 'short' AND s.ident_kind = 'short'
        GROUP BY s.lang, s.doc_id, s.key HAVING count(DISTINCT f.ident) = 1
    ),
    kept AS (
        SELECT s.lang, s.doc_id, s.key, s.key AS identity, 'kept_in_document' AS rule,
               'this document names another full name ending in «' || any_value(f.base) || '» and not this one' AS evidence
        FROM p s JOIN f ON f.lang = s.lang AND f.doc_id = s.doc_id AND f.base = s.base AND f.ident <> s.ident
        WHERE s.key_kind = 'short' AND s.ident_kind = 'full'
          AND NOT EXISTS (SELECT 1 FROM f AS own WHERE own.lang = s.lang AND own.doc_id = s.doc_id AND own.ident = s.ident)
        GROUP BY s.lang, s.doc_id, s.key
    )
    SELECT * FROM open UNION ALL SELECT * FROM kept;
CREATE TEMP TABLE identities AS
    SELECT lang, NULL::VARCHAR AS doc_id, key, identity FROM key_links
    UNION ALL
    SELECT lang, doc_id, key, identity FROM doc_links;
"""

LINKS_SQL = """
    SELECT lang, key AS entity_key, NULL::VARCHAR AS doc_id, identity, rule, evidence FROM key_links
    UNION ALL
    SELECT lang, key, doc_id, identity, rule, evidence FROM doc_links
"""


def _table(con, name: str, columns: dict[str, list[Any]]) -> None:
    con.register(f"_{name}_arrow", pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()}))
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM _{name}_arrow")
    con.unregister(f"_{name}_arrow")


def link_identities(con) -> str:
    """Decide the identities of the current mentions' keys (see the module docstring).

    Needs the temporary table ``alias_best(alias_key, entity_key)`` (the statistics'
    alias votes); creates ``raw``, ``dockeys``, ``identities`` and helpers; returns the
    SQL that selects the ``entity_links`` rows.
    """
    for statement in (s.strip() for s in _KEYS_SQL.split(";")):
        if statement:
            con.execute(statement)
    aliases: dict[str, dict[str, str]] = {}
    for lang, alias, canonical in con.execute(
        "SELECT DISTINCT k.lang, a.alias_key, a.entity_key FROM alias_best a "
        "JOIN key_stats k ON k.key = a.alias_key OR k.key = a.entity_key ORDER BY ALL"
    ).fetchall():
        aliases.setdefault(lang, {})[alias] = canonical
    by_lang: dict[str, dict[str, KeyInfo]] = {}
    for lang, key, mentions, docs, label, form, share in con.execute(
        "SELECT lang, key, mentions, docs, label, form, person_share FROM key_stats ORDER BY lang, key"
    ).fetchall():
        by_lang.setdefault(lang, {})[key] = KeyInfo(key, label, int(mentions), int(docs), form, float(share))

    groups = {lang: merge_keys(lang, keys, aliases.get(lang, {})) for lang, keys in by_lang.items()}
    proposed = [(lang, *c) for lang, g in groups.items() for c in candidates(lang, g)]
    _table(con, "cand", {"lang": [c[0] for c in proposed], "src": [c[1] for c in proposed],
                         "dst": [c[2] for c in proposed], "rule": [c[3] for c in proposed]})
    members = [(lang, key, g.find(key)) for lang, g in groups.items() for key in g.keys]
    _table(con, "members", {"lang": [m[0] for m in members], "key": [m[1] for m in members],
                            "ident": [m[2] for m in members]})
    support = {(lang, src, dst): int(n) for lang, src, dst, _, n in con.execute(_SUPPORT_SQL).fetchall()}
    _accept(groups, proposed, support)

    rows = [(lang, key, g.find(key), g.edges[key]) for lang, g in groups.items() for key in g.keys
            if g.find(key) != key]
    _table(con, "key_links", {"lang": [r[0] for r in rows], "key": [r[1] for r in rows],
                              "identity": [r[2] for r in rows], "rule": [r[3].rule for r in rows],
                              "evidence": [r[3].evidence for r in rows]})
    sigs = [(lang, key, g.find(key), surname_sig(key, lang), _kind(key), _kind(g.find(key)))
            for lang, g in groups.items() for key, info in g.keys.items() if info.person]
    _table(con, "person_sigs", {"lang": [s[0] for s in sigs], "key": [s[1] for s in sigs],
                                "ident": [s[2] for s in sigs], "sig": [s[3] for s in sigs],
                                "base": [s[3].removesuffix("/f") for s in sigs],
                                "key_kind": [s[4] for s in sigs], "ident_kind": [s[5] for s in sigs]})
    for statement in (s.strip() for s in _DOC_LINKS_SQL.split(";")):
        if statement:
            con.execute(statement)
    return LINKS_SQL


def _kind(identity: str) -> str:
    words = identity.split()
    if len(words) == 1 and not is_initial(words[0]):
        return "short"
    return "full" if len(words) >= 2 and not is_initial(words[0]) else "other"


def _accept(groups: dict, proposed: list[tuple[str, str, str, str]], support: dict[tuple[str, str, str], int]) -> None:
    """Join the proposed pairs that documents back: an acronym to its one co-occurring
    expansion; a surname to the corpus's one full name with it, if they meet in a document."""
    by_source: dict[tuple[str, str, str], list[str]] = {}
    for lang, src, dst, rule in proposed:
        by_source.setdefault((lang, src, rule), []).append(dst)
    for (lang, src, rule), targets in sorted(by_source.items()):
        g = groups[lang]
        # two letters abbreviate too much to trust one document («SA»)
        needed = 2 if rule == "acronym" and len(g.keys[src].form.strip()) == 2 else 1
        backed = [t for t in targets if support.get((lang, src, t), 0) >= needed]
        if rule == "acronym" and len(backed) == 1:
            n = support[(lang, src, backed[0])]
            g.join(src, backed[0], "acronym", f"«{g.keys[src].form}» abbreviates «{g.keys[backed[0]].form}» "
                                              f"(together in {n} documents)")
        elif rule == "surname" and len(targets) == 1 and backed:
            n = support[(lang, src, backed[0])]
            g.join(src, backed[0], "surname", f"the one full name ending in «{src}» in the corpus "
                                              f"(together in {n} documents)")
