"""A DuckDB store that many processes can write and read at once.

DuckDB refuses a second open of a file that a writer holds, so no process here ever
holds a database file while it works:

* **Writers** append immutable Parquet *segments*: rows are buffered, written to
  ``tmp/`` and moved into ``tables/<table>/`` with an atomic rename. Any number of
  writers (threads, processes, machines sharing the folder) can append at once; a
  reader never sees half a segment.
* **Readers** open an in-memory DuckDB with views over ``tables/<table>/*.parquet``
  (``Store.connect()``). The view named after a table keeps one row per key (see the
  ``-- key:`` lines in the migrations), so a row written twice (a rerun, a
  compaction caught half way) is seen once. Creating a view over Parquet reads the
  metadata of every segment it globs, so ``query`` creates only the views its SQL
  names, and the views those build on.
* **catalog.duckdb** is for people: the same views, written briefly when the store
  is migrated or by ``factory store catalog``. Writers never open it, so an
  interactive ``duckdb catalog.duckdb`` left open stalls nothing.
* **Migrations** are numbered SQL files, applied under a file lock, recorded in the
  ``_migrations`` table and materialised as zero-row schema segments so that old
  segments read with new columns as NULL (``union_by_name``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from factory.clock import utc_now
from factory.errors import FactoryError
from factory.files import file_lock, replace_atomically
from factory.store.schema import TableSpec, latest_version, migrations, table_specs

MIGRATIONS_TABLE = "_migrations"
_MIGRATIONS_SCHEMA = pa.schema(
    [("number", pa.int32()), ("name", pa.string()), ("checksum", pa.string()), ("applied_at", pa.timestamp("us"))]
)
DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
RETRIES = 5  # reads that met a segment a compaction removed meanwhile


class StoreError(FactoryError):
    pass


def json_value(value: Any) -> Any:
    """A JSON column as read back (DuckDB hands JSON over as text): parsed, or as it was."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


class Store:
    def __init__(self, root: str | os.PathLike[str], *, create: bool = True) -> None:
        self.root = Path(root).resolve()
        if not self.root.exists():
            if not create:
                raise StoreError(f"{self.root}: no store here (run `factory ingest` first)")
            self.root.mkdir(parents=True)
        elif not self.root.is_dir():
            raise StoreError(f"{self.root}: not a folder")
        (self.root / "tables").mkdir(exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        self.migrate()

    # ---------------------------------------------------------------- layout
    def table_dir(self, table: str) -> Path:
        return self.root / "tables" / table

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.duckdb"

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.root / ".lock")

    # ------------------------------------------------------------ migrations
    def applied_migrations(self) -> list[int]:
        folder = self.table_dir(MIGRATIONS_TABLE)
        if not folder.exists() or not any(folder.glob("*.parquet")):
            return []
        table = pq.read_table(sorted(str(p) for p in folder.glob("*.parquet")), schema=_MIGRATIONS_SCHEMA)
        return sorted(set(table.column("number").to_pylist()))

    def migrate(self) -> list[int]:
        """Apply migrations this store lacks; returns the numbers applied now."""
        known = latest_version()
        applied = self.applied_migrations()
        if applied and max(applied) > known:
            raise StoreError(
                f"{self.root}: the store is at schema {max(applied)}, this factory knows {known}; upgrade the factory"
            )
        if {m.number for m in migrations()} <= set(applied):
            return []
        with self._lock():
            applied = self.applied_migrations()
            missing = [m for m in migrations() if m.number not in applied]
            if not missing:
                return []
            specs = table_specs(known)
            for spec in specs.values():
                # a zero-row segment carrying the full current schema: globs are never
                # empty and older segments gain the new columns as NULL when read
                folder = self.table_dir(spec.name)
                folder.mkdir(parents=True, exist_ok=True)
                tmp = self.root / "tmp" / f"_schema-{spec.name}-{uuid.uuid4().hex}.parquet"
                pq.write_table(spec.arrow.empty_table(), tmp)
                replace_atomically(tmp, folder / f"_schema-{known:03d}.parquet")
            rows = [
                {"number": m.number, "name": m.name, "checksum": m.checksum, "applied_at": utc_now()} for m in missing
            ]
            folder = self.table_dir(MIGRATIONS_TABLE)
            folder.mkdir(parents=True, exist_ok=True)
            tmp = self.root / "tmp" / f"_migrations-{uuid.uuid4().hex}.parquet"
            pq.write_table(pa.Table.from_pylist(rows, schema=_MIGRATIONS_SCHEMA), tmp)
            replace_atomically(tmp, folder / f"{known:03d}-{uuid.uuid4().hex[:8]}.parquet")
        self.refresh_catalog(quiet=True)
        return [m.number for m in missing]

    # --------------------------------------------------------------- readers
    def view_sql(self, absolute: bool = True) -> list[str]:
        """The statements that turn an empty DuckDB into a view of this store."""
        statements = []
        for spec in table_specs().values():
            glob = str(self.table_dir(spec.name) / "*.parquet")
            if not absolute:
                glob = f"tables/{spec.name}/*.parquet"
            glob = glob.replace("'", "''")
            raw = f"read_parquet('{glob}', union_by_name = true)"
            statements.append(f'CREATE OR REPLACE VIEW "{spec.name}__segments" AS SELECT * FROM {raw}')
            if spec.keep == "all" or not spec.key:
                body = f'SELECT * EXCLUDE (_writer, _seq) FROM "{spec.name}__segments"'
            else:
                order = "DESC" if spec.keep == "last" else "ASC"
                keys = ", ".join(f'"{k}"' for k in spec.key)
                body = (
                    f'SELECT * EXCLUDE (_writer, _seq, _rn) FROM (SELECT *, row_number() OVER '
                    f'(PARTITION BY {keys} ORDER BY _written_at {order}, _writer {order}, _seq {order}) AS _rn '
                    f'FROM "{spec.name}__segments") WHERE _rn = 1'
                )
            # "<table>__latest" stays the plain keyed view even when a migration
            # redefines "<table>" on top of it (as 007 does for live chunks)
            statements.append(f'CREATE OR REPLACE VIEW "{spec.name}__latest" AS {body}')
            statements.append(f'CREATE OR REPLACE VIEW "{spec.name}" AS SELECT * FROM "{spec.name}__latest"')
        glob = str(self.table_dir(MIGRATIONS_TABLE) / "*.parquet").replace("'", "''")
        statements.append(f"CREATE OR REPLACE VIEW \"{MIGRATIONS_TABLE}\" AS SELECT * FROM read_parquet('{glob}')")
        for migration in migrations():
            # the catalog file keeps its views: replace them on every refresh
            statements.extend(
                re.sub(r"^\s*create\s+view\b", "CREATE OR REPLACE VIEW", s, count=1, flags=re.IGNORECASE)
                for s in migration.view_statements()
            )
        return statements

    def connect(self, sql: str | None = None) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB with views over the segments (only those ``sql`` needs, when
        given). Holds no file lock.

        Creating a view reads the schema of every segment it globs, and a compaction
        (another process's, say) can delete one in between: creating them is retried.
        """
        statements = self.view_sql()
        if sql is not None:
            statements = views_for(sql, statements)
        for attempt in range(RETRIES):
            con = duckdb.connect(":memory:", config=DUCKDB_CONFIG)
            try:
                for statement in statements:
                    con.execute(statement)
                return con
            except duckdb.IOException:
                con.close()
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def query(self, sql: str, params: list[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a parameterised query over the views; returns rows as dicts.

        A compaction can delete a segment between DuckDB's glob and its read; the
        query is then simply retried (the merged segment holds the same rows).
        """
        for attempt in range(RETRIES):
            con = None
            try:
                con = self.connect(sql)  # creating the views globs the segments too: inside the retry
                cursor = con.execute(sql, params or [])
                names = [d[0] for d in cursor.description] if cursor.description else []
                return [dict(zip(names, row)) for row in cursor.fetchall()]
            except duckdb.IOException:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
            finally:
                if con is not None:
                    con.close()
        return []

    def scalar(self, sql: str, params: list[Any] | None = None) -> Any:
        rows = self.query(sql, params)
        return next(iter(rows[0].values())) if rows else None

    def refresh_catalog(self, quiet: bool = False) -> bool:
        """Write the views into catalog.duckdb for interactive use.

        Returns False (and changes nothing) when someone holds the catalog open.
        """
        try:
            con = duckdb.connect(str(self.catalog_path), config=DUCKDB_CONFIG)
        except duckdb.IOException as exc:
            if not quiet:
                raise StoreError(f"{self.catalog_path}: held open by another process ({exc}); close it and retry") from exc
            return False
        try:
            for statement in self.view_sql():
                con.execute(statement)
        finally:
            con.close()
        return True

    # --------------------------------------------------------------- writers
    def writer(self, name: str = "writer", *, flush_rows: int = 20_000, flush_seconds: float = 5.0) -> "SegmentWriter":
        return SegmentWriter(self, name, flush_rows=flush_rows, flush_seconds=flush_seconds)

    def append(self, table: str, rows: Iterable[dict[str, Any] | BaseModel], *, name: str = "append") -> int:
        """Write rows as one segment right away."""
        with self.writer(name) as writer:
            count = writer.append(table, rows)
        return count

    def segments(self, table: str) -> list[Path]:
        return sorted(p for p in self.table_dir(table).glob("*.parquet") if not p.name.startswith("_schema-"))

    def compact(self, table: str) -> int:
        """Merge a table's segments into one; returns the number of segments merged.

        Readers are safe: the merged file is renamed in before the inputs are removed,
        and the views drop the transient duplicates by key.
        """
        with self._lock():
            inputs = self.segments(table)
            if len(inputs) < 2:
                return 0
            spec = table_specs()[table]
            merged = pq.read_table([str(p) for p in inputs], schema=spec.arrow)
            tmp = self.root / "tmp" / f"compact-{table}-{uuid.uuid4().hex}.parquet"
            pq.write_table(merged, tmp)
            replace_atomically(tmp, self.table_dir(table) / f"compact-{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:8]}.parquet")
            for path in inputs:
                path.unlink(missing_ok=True)
            return len(inputs)


_VIEW_NAME = re.compile(r'^CREATE OR REPLACE VIEW\s+"?([A-Za-z_][A-Za-z0-9_]*)"?\s+AS\b', re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def views_for(sql: str, statements: list[str]) -> list[str]:
    """The view statements ``sql`` needs: the views it names and, in turn, theirs, in order.

    Names are found as words (a column that happens to share a view's name only adds a
    view). A view defined twice (a later migration replacing it) keeps both statements
    in place, so views created between them bind as they do when every view is made.
    """
    named: list[str] = []
    bodies: dict[str, list[str]] = {}
    for statement in statements:
        match = _VIEW_NAME.match(statement)
        if match is None:
            return statements  # not a view statement: no safe way to pick, make them all
        named.append(match.group(1))
        bodies.setdefault(match.group(1), []).append(statement[match.end():])
    wanted: set[str] = set()
    todo = [w for w in _WORD.findall(sql) if w in bodies]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(w for body in bodies[name] for w in _WORD.findall(body) if w in bodies and w not in wanted)
    return [statement for name, statement in zip(named, statements) if name in wanted]


class SegmentWriter:
    """Buffers rows per table and writes them as atomically renamed Parquet segments.

    Thread-safe. Rows are flushed when a buffer reaches ``flush_rows``, when
    ``flush_seconds`` have passed since the last flush (checked on append), on
    ``flush()`` and on close. Rows appended but not flushed are lost if the process
    is killed: callers flush at their own checkpoints (the LLM gateway after each call).
    """

    def __init__(self, store: Store, name: str, *, flush_rows: int, flush_seconds: float) -> None:
        self.store = store
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40]
        self.writer_id = f"{safe}-{socket.gethostname()[:20]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._buffers: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._segment = 0
        self._seq = 0
        self._last_flush = time.monotonic()
        self._lock = threading.RLock()
        self._specs = table_specs()

    def __enter__(self) -> "SegmentWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, table: str, rows: Iterable[dict[str, Any] | BaseModel]) -> int:
        spec = self._specs.get(table)
        if spec is None:
            raise StoreError(f"unknown table {table!r}; known: {', '.join(sorted(self._specs))}")
        now = utc_now()
        count = 0
        with self._lock:
            buffer = self._buffers[table]
            for row in rows:
                record = row.model_dump(mode="json") if isinstance(row, BaseModel) else dict(row)
                unknown = set(record) - set(spec.columns)
                if unknown:
                    raise StoreError(f"table {table!r} has no column(s) {sorted(unknown)}")
                for column in spec.json_columns:
                    if column in record and record[column] is not None and not isinstance(record[column], str):
                        record[column] = json.dumps(record[column], ensure_ascii=False, sort_keys=True, default=str)
                self._seq += 1
                record["_writer"] = self.writer_id
                record["_seq"] = self._seq
                record["_written_at"] = now
                buffer.append(record)
                count += 1
            if len(buffer) >= self.flush_rows:
                self._flush_table(table)
            elif time.monotonic() - self._last_flush > self.flush_seconds:
                self.flush()
        return count

    def flush(self, table: str | None = None) -> None:
        with self._lock:
            for name in [table] if table else list(self._buffers):
                self._flush_table(name)
            self._last_flush = time.monotonic()

    def _flush_table(self, table: str) -> None:
        rows = self._buffers.get(table)
        if not rows:
            return
        spec = self._specs[table]
        try:
            data = pa.Table.from_pylist(rows, schema=spec.arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise StoreError(f"rows for {table!r} do not match its schema: {exc}") from exc
        self._segment += 1
        name = f"{self.writer_id}-{self._segment:08d}.parquet"
        tmp = self.store.root / "tmp" / name
        pq.write_table(data, tmp)
        folder = self.store.table_dir(table)
        folder.mkdir(parents=True, exist_ok=True)
        replace_atomically(tmp, folder / name)
        self._buffers[table] = []

    def close(self) -> None:
        self.flush()
