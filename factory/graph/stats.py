"""Entity and co-occurrence statistics, computed in DuckDB SQL as one generation.

Inputs are the ``mentions`` of the current version of each chunk (a mention found
in an older version of a chunk no longer counts) and the ``entity_aliases`` links.
Outputs, all written as Parquet segments of one new *generation*:

* ``entity_links``: which mention keys name one entity, with the rule and the evidence
  (the corpus identity step, ``factory.graph.identity``, which runs first);
* ``chunk_entities``: which identities each chunk holds, with the label its mentions there carry;
* ``entities``: per identity its label, name, surface forms (of every key linked to it),
  mention count, chunk and document frequency;
* ``entity_pairs``: per pair of entities sharing a chunk, the chunk and document
  co-occurrence counts and NPMI over chunks, stored in both orientations;
* a ``stats_generations`` row, written last: the ``current_*`` views (and
  ``mention_identities``) switch to the new generation only once every segment of it is
  in place.

Everything happens in SQL with DuckDB spilling to the store's tmp folder, so a million
chunks need no in-memory graph and no Python loop over pairs; the identity step's
Python works on distinct keys only.
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from factory.clock import utc_now
from factory.files import replace_atomically
from factory.graph.identity import link_identities
from factory.store.schema import table_specs

STATS_TABLES = ("entity_links", "chunk_entities", "entities", "entity_pairs")
# DuckDB's own default is 80 % of the machine's memory: at 1M chunks the pair join took
# 18 GB of a 24 GB machine. Above this it spills to the store's tmp folder instead.
MEMORY_LIMIT = "3GB"
KEEP_GENERATIONS = 2
MAX_ALIASES = 50
AKA_MAX_RATIO, AKA_SLACK = 3, 3  # an "aka" alias in more than 3x+3 the chunks of its name is not folded

# alias_key -> canonical key, by the most evidence chunks (the identity step joins them).
# An "also known as" link never folds a name that is far more common on its own than
# the name it is linked to: that is a misread ("also known as Africa's World War" is
# no reason to fold every "Africa"); acronyms may be the commoner form (NATO).
_ALIAS_VOTES = """
CREATE TEMP TABLE raw_freq AS
    SELECT m.entity_key AS key, count(DISTINCT m.chunk_id) AS cf
    FROM mentions m JOIN chunks c ON c.chunk_id = m.chunk_id AND c.content_hash = m.content_hash
    GROUP BY ALL;
CREATE TEMP TABLE alias_votes AS
    SELECT a.alias_key, a.entity_key, count(DISTINCT a.evidence_chunk_id) AS n
    FROM entity_aliases a
    JOIN chunks c ON c.chunk_id = a.evidence_chunk_id AND c.content_hash = a.content_hash
    LEFT JOIN raw_freq fa ON fa.key = a.alias_key
    LEFT JOIN raw_freq fe ON fe.key = a.entity_key
    WHERE a.alias_key <> a.entity_key
      AND (a.rule <> 'aka' OR coalesce(fa.cf, 0) <= {aka_ratio} * coalesce(fe.cf, 0) + {aka_slack})
    GROUP BY a.alias_key, a.entity_key;
CREATE TEMP TABLE alias_best AS
    SELECT alias_key, first(entity_key ORDER BY n DESC, entity_key) AS entity_key
    FROM alias_votes GROUP BY alias_key;
"""

# every mention under its identity: a link inside its document first, then a corpus link
_CURRENT_MENTIONS = """
CREATE TEMP TABLE cur AS
    SELECT r.chunk_id, r.doc_id, r.lang, r.text, r.label,
           CASE WHEN r.label IN ('date', 'number') THEN r.key
                ELSE coalesce(d.identity, k.identity, r.key) END AS key
    FROM raw r
    LEFT JOIN identities d ON d.lang = r.lang AND d.doc_id = r.doc_id AND d.key = r.key
    LEFT JOIN identities k ON k.lang = r.lang AND k.doc_id IS NULL AND k.key = r.key;
"""

_ENTITIES = r"""
CREATE TEMP TABLE ent AS
    SELECT lang, key, count(*) AS mention_count, count(DISTINCT chunk_id) AS chunk_freq,
           count(DISTINCT doc_id) AS doc_freq
    FROM cur GROUP BY ALL;
CREATE TEMP TABLE ent_label AS
    SELECT lang, key, first(label ORDER BY n DESC, label) AS label
    FROM (SELECT lang, key, label, count(*) AS n FROM cur GROUP BY ALL) GROUP BY ALL;
CREATE TEMP TABLE ent_forms AS
    WITH forms AS (
        SELECT lang, key, text, count(*) AS n FROM cur GROUP BY ALL
        UNION ALL
        SELECT DISTINCT e.lang, e.key, a.alias AS text, 0 AS n
        FROM entity_aliases a
        LEFT JOIN identities ia ON ia.doc_id IS NULL AND ia.key = a.alias_key
        LEFT JOIN identities ie ON ie.doc_id IS NULL AND ie.key = a.entity_key
        JOIN ent e ON e.key IN (coalesce(ia.identity, a.alias_key), coalesce(ie.identity, a.entity_key))
    ),
    merged AS (SELECT lang, key, text, max(n) AS n FROM forms GROUP BY ALL)
    SELECT lang, key,
           -- the name: the most frequent form that is already the key's own form
           -- («Россия», not the more frequent «России»), else the most frequent form
           first(text ORDER BY (trim(regexp_replace(replace(lower(text), 'ё', 'е'), '[^\p{{L}}\p{{N}}]+', ' ', 'g')) = key) DESC,
                 n DESC, text) AS name,
           list(text ORDER BY n DESC, text)[1:{max_aliases}] AS aliases
    FROM merged GROUP BY ALL;
CREATE TEMP TABLE chunk_n AS
    SELECT c.lang, count(*)::DOUBLE AS n
    FROM annotated_chunks a JOIN chunks c ON c.chunk_id = a.chunk_id AND c.content_hash = a.content_hash
    GROUP BY ALL;
-- the label the chunk's own mentions give (the entity's label is its corpus-wide vote):
-- where they differ, the name means another thing there ('Барселона' the club, not the city)
CREATE TEMP TABLE ce AS
    WITH per AS (
        SELECT lang, key, chunk_id, any_value(doc_id) AS doc_id, label, count(*) AS n
        FROM cur GROUP BY lang, key, chunk_id, label
    )
    SELECT lang, key, chunk_id, any_value(doc_id) AS doc_id, sum(n)::BIGINT AS n_mentions,
           first(label ORDER BY n DESC, label) AS label
    FROM per GROUP BY lang, key, chunk_id;
"""

_PAIRS = """
CREATE TEMP TABLE pairs AS
    SELECT x.lang, x.key AS key_a, y.key AS key_b, count(*) AS chunk_count, count(DISTINCT x.doc_id) AS doc_count
    FROM ce x JOIN ce y ON x.chunk_id = y.chunk_id AND x.lang = y.lang AND x.key < y.key
    GROUP BY ALL;
"""

# NPMI over chunks: log(p(a,b) / (p(a) p(b))) / -log p(a,b), p = count / chunks of the language;
# a pair present in every chunk has p(a,b) = 1 and NPMI 1 by the limit
_NPMI = """
    CASE WHEN p.chunk_count >= n.n THEN 1.0
         ELSE ln(p.chunk_count::DOUBLE * n.n / (ea.chunk_freq::DOUBLE * eb.chunk_freq))
              / -ln(p.chunk_count::DOUBLE / n.n) END
"""


def _run(con, block: str) -> None:
    for statement in (s.strip() for s in block.split(";")):
        if statement:
            con.execute(statement)


def _size(value: str) -> str:
    """A DuckDB memory size ("3GB", "512MB"), checked: it is put into a SET statement."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", value.strip()):
        raise ValueError(f"memory_limit {value!r} is not a size such as '3GB'")
    return value.strip()


def _new_generation() -> str:
    now = datetime.now(timezone.utc)
    return f"g{now:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:6]}"


def _copy(con, store, table: str, select_sql: str, generation: str, written_at: str, order: str = "") -> Path:
    """COPY a query into a segment of ``table`` (columns cast to the table's schema)."""
    spec = table_specs()[table]
    casts = []
    for name in spec.columns:
        if name == "generation":
            casts.append(f"'{generation}'::VARCHAR AS generation")
        else:
            casts.append(f'CAST(q."{name}" AS {_duck_type(con, table, name)}) AS "{name}"')
    casts += [f"'stats-{generation}'::VARCHAR AS _writer", "0::BIGINT AS _seq", f"TIMESTAMP '{written_at}' AS _written_at"]
    tmp = store.root / "tmp" / f"stats-{table}-{generation}.parquet"
    target = str(tmp).replace("'", "''")
    con.execute(
        f"COPY (SELECT {', '.join(casts)} FROM ({select_sql}) q {order}) TO '{target}' "
        "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)"
    )
    final = store.table_dir(table) / f"stats-{generation}.parquet"
    final.parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(tmp, final)
    return final


def _duck_type(con, table: str, column: str) -> str:
    row = con.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
        [f"{table}__segments", column],
    ).fetchone()
    return row[0] if row else "VARCHAR"


def compute_statistics(store, run_id: str, *, memory_limit: str = MEMORY_LIMIT) -> dict[str, Any]:
    """Compute a new generation of entity statistics from the current mentions.

    Returns a summary: generation, n_chunks, n_mentions, n_entities, n_pairs,
    per-language figures and seconds. ``memory_limit`` bounds DuckDB's memory (a DuckDB
    size such as "3GB"); the rest spills to disk.
    """
    started = time.perf_counter()
    generation = _new_generation()
    written_at = utc_now().isoformat(sep=" ")
    spill = store.root / "tmp" / f"duckdb-spill-{generation}"
    con = store.connect()
    try:
        con.execute(f"SET temp_directory = '{str(spill).replace(chr(39), chr(39) * 2)}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute(f"SET memory_limit = '{_size(memory_limit)}'")
        con.execute("SET enable_progress_bar = false")
        _run(con, _ALIAS_VOTES.format(aka_ratio=AKA_MAX_RATIO, aka_slack=AKA_SLACK))
        links_sql = link_identities(con)
        for block in (_CURRENT_MENTIONS, _ENTITIES.format(max_aliases=MAX_ALIASES), _PAIRS):
            _run(con, block)
        _copy(con, store, "entity_links", links_sql, generation, written_at, "ORDER BY q.lang, q.entity_key")
        _copy(con, store, "chunk_entities", """
            SELECT ce.lang, ce.key AS entity_key, ce.chunk_id, ce.doc_id, ce.label, ce.n_mentions
            FROM ce
        """, generation, written_at, "ORDER BY q.lang, q.entity_key")
        _copy(con, store, "entities", """
            SELECT e.lang, e.key AS entity_key, l.label, f.name, f.aliases,
                   e.mention_count, e.chunk_freq, e.doc_freq
            FROM ent e JOIN ent_label l USING (lang, key) JOIN ent_forms f USING (lang, key)
        """, generation, written_at, "ORDER BY q.lang, q.entity_key")
        _copy(con, store, "entity_pairs", f"""
            WITH scored AS (
                SELECT p.lang, p.key_a, p.key_b, la.label AS label_a, lb.label AS label_b,
                       p.chunk_count, p.doc_count, ea.chunk_freq AS chunk_freq_a, eb.chunk_freq AS chunk_freq_b,
                       {_NPMI} AS npmi
                FROM pairs p
                JOIN chunk_n n ON n.lang = p.lang
                JOIN ent ea ON ea.lang = p.lang AND ea.key = p.key_a
                JOIN ent eb ON eb.lang = p.lang AND eb.key = p.key_b
                JOIN ent_label la ON la.lang = p.lang AND la.key = p.key_a
                JOIN ent_label lb ON lb.lang = p.lang AND lb.key = p.key_b
            )
            SELECT * FROM scored
            UNION ALL
            SELECT lang, key_b, key_a, label_b, label_a, chunk_count, doc_count, chunk_freq_b, chunk_freq_a, npmi
            FROM scored
        """, generation, written_at, "ORDER BY q.lang, q.key_a")
        per_lang = {
            lang: {"chunks": int(n_chunks), "entities": n_entities, "mentions": n_mentions, "pairs": n_pairs}
            for lang, n_chunks, n_entities, n_mentions, n_pairs in con.execute("""
                SELECT n.lang, n.n,
                       (SELECT count(*) FROM ent e WHERE e.lang = n.lang),
                       (SELECT count(*) FROM cur m WHERE m.lang = n.lang),
                       (SELECT count(*) FROM pairs p WHERE p.lang = n.lang)
                FROM chunk_n n ORDER BY n.lang
            """).fetchall()
        }
    finally:
        con.close()
        _remove_tree(spill)
    summary = {
        "generation": generation,
        "n_chunks": sum(v["chunks"] for v in per_lang.values()),
        "n_mentions": sum(v["mentions"] for v in per_lang.values()),
        "n_entities": sum(v["entities"] for v in per_lang.values()),
        "n_pairs": sum(v["pairs"] for v in per_lang.values()),
        "per_lang": per_lang,
        "seconds": round(time.perf_counter() - started, 3),
    }
    store.append("stats_generations", [{
        "generation": generation, "n_chunks": summary["n_chunks"], "n_mentions": summary["n_mentions"],
        "n_entities": summary["n_entities"], "n_pairs": summary["n_pairs"], "seconds": summary["seconds"],
        "computed_at": datetime.fromisoformat(written_at), "run_id": run_id,
    }], name="stats")
    prune_generations(store)
    return summary


def prune_generations(store, keep: int = KEEP_GENERATIONS) -> int:
    """Delete statistics segments of all but the newest ``keep`` generations; returns files removed."""
    removed = 0
    for table in STATS_TABLES:
        files = sorted(store.table_dir(table).glob("stats-g*.parquet"))
        for path in files[:-keep] if keep else files:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def _remove_tree(path: Path) -> None:
    if not path.exists():
        return
    for child in sorted(path.rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    path.rmdir()
