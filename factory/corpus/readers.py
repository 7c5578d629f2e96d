"""Corpus readers: JSONL (optionally gzipped), Parquet, Wikipedia-style JSON, text folders.

Every reader streams: one record is in memory at a time (a Parquet batch, a JSON line),
so a million-line file costs no more memory than its longest record. A record that
cannot be used (malformed JSON, no text, bad bytes, a duplicate id, a document over
``max_doc_chars``) becomes a :class:`ReadProblem` naming the file and line; the good
records are still read. With ``strict=True`` the first problem raises
:class:`CorpusError` instead.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Any, Iterator

import pyarrow.parquet as pq

from factory.errors import FactoryError
from factory.records import Document, Lang, Record

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")
TEXT_SUFFIXES = (".txt", ".md")
PARQUET_SUFFIXES = (".parquet",)
JSON_SUFFIXES = (".json",)
# JSON escapes a character in at most 6 bytes (\uXXXX); anything longer than this many
# bytes per allowed character cannot hold an allowed document and is skipped unread
_BYTES_PER_CHAR = 6
_SKIP_BLOCK = 1 << 20


class CorpusError(FactoryError):
    """Bad corpus input: the message starts with ``file:line``."""


class ReadProblem(Record):
    """A record the reader skipped, and why."""

    source: str
    line: int = 0
    doc_id: str | None = None
    # malformed_json | missing_id | missing_text | empty_text | bad_encoding | duplicate_id | too_long
    # | empty_file | malformed_parquet | unreadable
    kind: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


class CorpusReader:
    """Iterate over the documents of a file or folder; problems collect in ``problems``.

    ``path`` may be a .jsonl/.jsonl.gz/.ndjson, .parquet or .json file, a .txt/.md file,
    or a folder holding any of these (read recursively in sorted order; text files get
    their path relative to the folder as id).
    """

    def __init__(self, path: str | Path, lang: Lang, *, max_doc_chars: int = 20_000_000, strict: bool = False) -> None:
        self.path = Path(path)
        self.lang = lang
        self.max_doc_chars = max_doc_chars
        self.strict = strict
        self.problems: list[ReadProblem] = []
        self.records_seen = 0
        self._seen_ids: set[str] = set()
        if not self.path.exists():
            raise CorpusError(f"{self.path}: no such file or folder")

    # ------------------------------------------------------------------ api
    def __iter__(self) -> Iterator[Document]:
        if self.path.is_dir():
            files = sorted(p for p in self.path.rglob("*") if p.is_file() and _kind(p) is not None)
            if not files:
                self._problem(str(self.path), 0, None, "empty_file", "folder holds no .jsonl, .parquet, .json, .txt or .md files")
            for file in files:
                yield from self._read_file(file, base=self.path)
        else:
            if _kind(self.path) is None:
                raise CorpusError(
                    f"{self.path}: unsupported corpus file (use .jsonl, .jsonl.gz, .parquet, .json, .txt, .md or a folder)"
                )
            yield from self._read_file(self.path, base=self.path.parent)

    def problem_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for problem in self.problems:
            counts[problem.kind] = counts.get(problem.kind, 0) + 1
        return counts

    # ------------------------------------------------------------ internals
    def _problem(self, source: str, line: int, doc_id: str | None, kind: str, message: str) -> None:
        problem = ReadProblem(source=source, line=line, doc_id=doc_id, kind=kind, message=message)
        if self.strict:
            raise CorpusError(f"{problem} (strict mode stops at the first bad record)")
        self.problems.append(problem)

    def _read_file(self, file: Path, base: Path) -> Iterator[Document]:
        kind = _kind(file)
        if file.stat().st_size == 0:
            self._problem(str(file), 0, None, "empty_file", "empty file: no documents")
            return
        if kind == "jsonl":
            try:
                yield from self._read_jsonl(file)
            except (OSError, EOFError) as exc:  # a truncated or damaged .gz, an unreadable file
                self._problem(str(file), 0, None, "unreadable", f"cannot read the file: {exc}")
        elif kind == "parquet":
            yield from self._read_parquet(file)
        elif kind == "json":
            yield from self._read_json(file)
        else:
            yield from self._read_text(file, base)

    def _make(self, source: str, line: int, raw: Any, *, id_field: str = "id", text_field: str = "text") -> Document | None:
        """Validate one raw record (a dict) into a Document, or record why not."""
        if not isinstance(raw, dict):
            self._problem(source, line, None, "malformed_json", f"expected a JSON object, got {type(raw).__name__}")
            return None
        doc_id = raw.get(id_field)
        if doc_id is None or (isinstance(doc_id, str) and not doc_id.strip()):
            self._problem(source, line, None, "missing_id", f"record has no '{id_field}'")
            return None
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            self._problem(source, line, None, "missing_id", f"'{id_field}' must be a string or integer, got {type(doc_id).__name__}")
            return None
        doc_id = str(doc_id).strip()
        text = raw.get(text_field)
        if text is None:
            self._problem(source, line, doc_id, "missing_text", f"document {doc_id!r} has no '{text_field}'")
            return None
        if not isinstance(text, str):
            self._problem(source, line, doc_id, "missing_text", f"document {doc_id!r}: '{text_field}' must be a string, got {type(text).__name__}")
            return None
        if not text or text.isspace():
            self._problem(source, line, doc_id, "empty_text", f"document {doc_id!r} has empty text")
            return None
        if len(text) > self.max_doc_chars:
            self._problem(
                source, line, doc_id, "too_long",
                f"document {doc_id!r} has {len(text):,} characters, over the limit of {self.max_doc_chars:,} (ingest.max_doc_chars)",
            )
            return None
        try:  # JSON allows lone surrogates (\ud800) that no UTF-8 file can store
            text.encode("utf-8")
            json.dumps(raw | {text_field: ""}, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError as exc:
            self._problem(source, line, doc_id, "bad_encoding", f"document {doc_id!r} holds characters UTF-8 cannot encode ({exc.reason})")
            return None
        if doc_id in self._seen_ids:
            self._problem(source, line, doc_id, "duplicate_id", f"duplicate id {doc_id!r}: the first document with this id is kept")
            return None
        self._seen_ids.add(doc_id)
        title = raw.get("title")
        meta = {k: v for k, v in raw.items() if k not in {id_field, text_field, "title"}}
        self.records_seen += 1
        return Document(
            id=doc_id,
            title=str(title) if title is not None else "",
            text=text,
            lang=self.lang,
            source=source,
            meta=meta,
        )

    # ------------------------------------------------------------- formats
    def _read_jsonl(self, file: Path) -> Iterator[Document]:
        source = str(file)
        limit = self.max_doc_chars * _BYTES_PER_CHAR + 65_536
        with _open_binary(file) as handle:
            number = 0
            while True:
                raw_line = handle.readline(limit)
                if not raw_line:
                    break
                number += 1
                if not raw_line.endswith(b"\n") and len(raw_line) >= limit:
                    skipped = len(raw_line) + _skip_rest_of_line(handle)
                    self._problem(
                        source, number, None, "too_long",
                        f"line of {skipped:,} bytes cannot hold a document within ingest.max_doc_chars={self.max_doc_chars:,}; skipped unread",
                    )
                    continue
                if not raw_line.strip():
                    continue
                try:
                    text_line = raw_line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self._problem(source, number, None, "bad_encoding", f"not valid UTF-8 (byte {exc.start}: {exc.reason})")
                    continue
                try:
                    raw = json.loads(text_line)
                except json.JSONDecodeError as exc:
                    self._problem(source, number, None, "malformed_json", f"malformed JSON: {exc.msg} at column {exc.colno}")
                    continue
                except (RecursionError, ValueError) as exc:  # nested thousands deep; an integer of 5,000 digits
                    self._problem(source, number, None, "malformed_json", f"malformed JSON: {_decode_failure(exc)}")
                    continue
                del raw_line, text_line
                doc = self._make(source, number, raw)
                if doc is not None:
                    yield doc

    def _read_parquet(self, file: Path) -> Iterator[Document]:
        source = str(file)
        try:
            parquet = pq.ParquetFile(file)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            self._problem(source, 0, None, "malformed_parquet", f"cannot read Parquet: {exc}")
            return
        names = parquet.schema_arrow.names
        for column in ("id", "text"):
            if column not in names:
                self._problem(source, 0, None, "missing_text" if column == "text" else "missing_id", f"Parquet file has no '{column}' column (columns: {', '.join(names)})")
                return
        row = 0
        for batch in parquet.iter_batches(batch_size=256):
            for raw in batch.to_pylist():
                row += 1
                doc = self._make(source, row, raw)
                if doc is not None:
                    yield doc

    def _read_json(self, file: Path) -> Iterator[Document]:
        """A JSON list of records, or an object mapping keys to records (Wikipedia summary dumps).

        Read whole (such files are small dumps); use JSONL for big corpora. Records may
        call their text ``extract`` and their id ``pageid``; an object's key is the id
        when the record has none.
        """
        source = str(file)
        if file.stat().st_size > self.max_doc_chars * _BYTES_PER_CHAR:
            self._problem(source, 0, None, "too_long", "JSON file too large to load whole; convert it to JSONL")
            return
        try:
            data = json.loads(file.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            self._problem(source, 0, None, "bad_encoding", f"not valid UTF-8 (byte {exc.start}: {exc.reason})")
            return
        except json.JSONDecodeError as exc:
            self._problem(source, exc.lineno, None, "malformed_json", f"malformed JSON: {exc.msg} at column {exc.colno}")
            return
        except (RecursionError, ValueError) as exc:
            self._problem(source, 0, None, "malformed_json", f"malformed JSON: {_decode_failure(exc)}")
            return
        if isinstance(data, dict):
            items = [(key, value) for key, value in data.items()]
        elif isinstance(data, list):
            items = [(None, value) for value in data]
        else:
            self._problem(source, 0, None, "malformed_json", "a .json corpus must be a list of records or an object of records")
            return
        for number, (key, raw) in enumerate(items, start=1):
            if isinstance(raw, dict):
                raw = dict(raw)
                if "text" not in raw and "extract" in raw:
                    raw["text"] = raw.pop("extract")
                if "id" not in raw:
                    raw["id"] = raw.pop("pageid", None) if "pageid" in raw else key
            doc = self._make(source, number, raw)
            if doc is not None:
                yield doc

    def _read_text(self, file: Path, base: Path) -> Iterator[Document]:
        source = str(file)
        doc_id = file.relative_to(base).as_posix()
        size = file.stat().st_size
        if size > self.max_doc_chars * 4:  # UTF-8 holds a character in at most 4 bytes
            self._problem(source, 0, doc_id, "too_long", f"file of {size:,} bytes is over ingest.max_doc_chars={self.max_doc_chars:,}; skipped unread")
            return
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            line = file.read_bytes()[: exc.start].count(b"\n") + 1
            self._problem(source, line, doc_id, "bad_encoding", f"not valid UTF-8 (byte {exc.start}: {exc.reason})")
            return
        title = file.stem
        if file.suffix == ".md":
            for line in text.splitlines():
                if line.startswith("# "):
                    title = line[2:].strip()
                    break
        doc = self._make(source, 1, {"id": doc_id, "title": title, "text": text})
        if doc is not None:
            yield doc


def _decode_failure(exc: Exception) -> str:
    """What the JSON decoder gave up on, besides syntax (which is a JSONDecodeError)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:200]


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(TEXT_SUFFIXES):
        return "text"
    return None


def _open_binary(file: Path) -> IO[bytes]:
    if file.name.lower().endswith(".gz"):
        return gzip.open(file, "rb")
    return open(file, "rb")


def _skip_rest_of_line(handle: IO[bytes]) -> int:
    """Consume the rest of an over-long line block by block; returns the bytes skipped."""
    skipped = 0
    while True:
        block = handle.readline(_SKIP_BLOCK)
        skipped += len(block)
        if not block or block.endswith(b"\n"):
            return skipped


def read_documents(path: str | Path, lang: Lang, **options: Any) -> list[Document]:
    """Convenience for small corpora and tests: all documents as a list (problems dropped)."""
    return list(CorpusReader(path, lang, **options))
