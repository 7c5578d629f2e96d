"""The store's schema, derived from the numbered migration files.

Each ``migrations/NNN_name.sql`` holds DuckDB DDL: ``CREATE TABLE``/``ALTER TABLE``
statements define segment tables, ``CREATE VIEW`` statements define reader views,
and ``-- key: table(col, ...) first|last|all`` comments say how the view named after
the table picks one row per key. Replaying every migration in an in-memory DuckDB
gives the current column types, which writers use to build their Parquet segments.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import duckdb
import pyarrow as pa

BOOKKEEPING = {"_writer": pa.string(), "_seq": pa.int64(), "_written_at": pa.timestamp("us")}

_KEY_RE = re.compile(r"^--\s*key:\s*(\w+)\s*\(([^)]*)\)\s*(first|last|all)\s*$", re.MULTILINE)
_NAME_RE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()[:16]

    def statements(self) -> list[str]:
        body = "\n".join(line for line in self.sql.splitlines() if not line.strip().startswith("--"))
        return [s.strip() for s in body.split(";") if s.strip()]

    def table_statements(self) -> list[str]:
        return [s for s in self.statements() if not _is_view(s)]

    def view_statements(self) -> list[str]:
        return [s for s in self.statements() if _is_view(s)]


def _is_view(statement: str) -> bool:
    return bool(re.match(r"create\s+(or\s+replace\s+)?view", statement, re.IGNORECASE))


@dataclass
class TableSpec:
    name: str
    arrow: pa.Schema
    json_columns: frozenset[str]
    key: tuple[str, ...] = ()
    keep: str = "all"  # first | last | all
    columns: tuple[str, ...] = field(default_factory=tuple)


@lru_cache(maxsize=1)
def migrations() -> tuple[Migration, ...]:
    folder = resources.files("factory.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME_RE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.number)
    numbers = [m.number for m in found]
    # numbers are handed out per change, so one may land before a lower one does: a gap
    # is allowed (the lower one is applied when it arrives), two files with one number not
    if len(set(numbers)) != len(numbers) or (numbers and numbers[0] != 1):
        raise RuntimeError(f"migrations must be numbered from 001, each number once, found {numbers}")
    return tuple(found)


def latest_version() -> int:
    return migrations()[-1].number


@lru_cache(maxsize=None)
def table_specs(upto: int | None = None) -> dict[str, TableSpec]:
    """Replay migrations 1..upto and describe every table."""
    upto = upto or latest_version()
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    keys: dict[str, tuple[tuple[str, ...], str]] = {}
    try:
        for migration in migrations():
            if migration.number > upto:
                break
            for statement in migration.table_statements():
                con.execute(statement)
            for table, cols, keep in _KEY_RE.findall(migration.sql):
                keys[table] = (tuple(c.strip().strip('"') for c in cols.split(",") if c.strip()), keep)
        specs: dict[str, TableSpec] = {}
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()]
        for table in tables:
            schema = con.sql(f'SELECT * FROM "{table}" LIMIT 0').to_arrow_table().schema
            json_cols = frozenset(
                r[0] for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND data_type = 'JSON'",
                    [table],
                ).fetchall()
            )
            fields = [schema.field(i) for i in range(len(schema))]
            fields += [pa.field(name, typ) for name, typ in BOOKKEEPING.items()]
            key, keep = keys.get(table, ((), "all"))
            specs[table] = TableSpec(
                name=table,
                arrow=pa.schema(fields),
                json_columns=json_cols,
                key=key,
                keep=keep,
                columns=tuple(schema.names),
            )
        return specs
    finally:
        con.close()
