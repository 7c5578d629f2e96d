"""1,000 malformed corpus records mixed with valid ones: `factory ingest` skips each bad one
with a `file:line: what` message and an ``ingest_errors`` row, stores every valid one, and
exits 0. Counts are checked exactly against what was planted, line by line."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

from typer.testing import CliRunner

from factory.cli import app
from factory.store import Store

MAX_CHARS = 2_000  # ingest.max_doc_chars for this test: giant lines stay cheap
BAD, GOOD = 1_000, 250
SEED = 7
MARKUP_ID = "[/] [bold]x"  # printed as Rich markup it raised (and '[bold]' vanished)


def _bad_records(rng: random.Random, good_ids: list[str]) -> list[tuple[bytes, str]]:
    """(line, the kind of problem the reader must report) for each way a record can be wrong."""
    def j(obj) -> bytes:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")

    def junk() -> bytes:
        return b"\xff" + bytes(rng.choice([b for b in range(256) if b != 0x0A]) for _ in range(rng.randint(5, 60)))

    makers = [
        # not JSON, or not a JSON object
        lambda i: (b'{"id": "t%d", "text": "cut off' % i, "malformed_json"),
        lambda i: (j({"id": f"g{i}", "text": "ok"}) + b" trailing", "malformed_json"),
        lambda i: (b"{'id': 'q%d', 'text': 'single quotes'}" % i, "malformed_json"),
        lambda i: (b"plain words, no JSON %d" % i, "malformed_json"),
        lambda i: (b'{"id": "nul%d", "text": "raw \x00 control byte"}' % i, "malformed_json"),
        lambda i: ("\ufeff".encode() + j({"id": f"bom{i}", "text": "a byte order mark mid-file"}), "malformed_json"),
        lambda i: (b'{"id": "deep%d", "text": ' % i + b"[" * 20_000 + b"]" * 20_000 + b"}", "malformed_json"),
        lambda i: (b'{"id": ' + b"9" * 5_000 + b', "text": "an id of 5,000 digits"}', "malformed_json"),
        lambda i: (rng.choice([b"[1, 2, 3]", b"42", b'"a string"', b"null", b"true", b"[]"]), "malformed_json"),
        # the id is missing or not a string/integer
        lambda i: (j({"text": f"no id here {i}"}), "missing_id"),
        lambda i: (j({"id": rng.choice([None, "", "   "]), "text": f"blank id {i}"}), "missing_id"),
        lambda i: (j({"id": rng.choice([{"$oid": f"o{i}"}, [i], True, 1.5]), "text": f"typed id {i}"}), "missing_id"),
        # the text is missing, not a string, or empty
        lambda i: (j({"id": f"nt{i}", "title": "no text"}), "missing_text"),
        lambda i: (j({"id": f"tt{i}", "text": rng.choice([None, 12, 3.5, ["a", "b"], {"t": "x"}, False])}), "missing_text"),
        lambda i: (j({"id": f"et{i}", "text": rng.choice(["", " ", "\n\t  "])}), "empty_text"),
        # bytes that are not UTF-8, or characters UTF-8 cannot hold
        lambda i: (b'{"id": "l%d", "text": "caf\xe9 in latin-1"}' % i, "bad_encoding"),
        lambda i: (junk(), "bad_encoding"),
        lambda i: (b'{"id": "s%d", "text": "lone \\ud800 surrogate"}' % i, "bad_encoding"),
        # too long: parsed and measured, or over the byte bound and skipped unread
        lambda i: (j({"id": f"big{i}", "text": "word " * (MAX_CHARS // 5 + 1)}), "too_long"),
        lambda i: (j({"id": f"giant{i}", "text": "x" * (MAX_CHARS * 6 + 70_000)}), "too_long"),
        # an id seen before in this file
        lambda i: (j({"id": rng.choice(good_ids[:50]), "text": f"second copy {i}"}), "duplicate_id"),
    ]
    return [makers[i % len(makers)](i) for i in range(BAD - 1)]


def _good_records(n: int) -> list[dict]:
    """Valid records, some odd: integer and SQL-ish ids, a number for a title, NUL escaped,
    emoji, right-to-left text, markup-looking brackets, extra fields of any type."""
    records = []
    for i in range(n):
        record: dict = {"id": f"doc-{i:04d}", "text": f"Record {i} tells of the mill at Vellmoor and the {i}th flood."}
        match i % 10:
            case 1:
                record["id"] = 100_000 + i  # integers are allowed ids
            case 2:
                record["id"] = f"it's [/] {i}; DROP TABLE documents; --"
            case 3:
                record["title"] = 1234
            case 4:
                record["text"] += " Escaped NUL \u0000 inside, and a tab\tand emoji 🌊."
            case 5:
                record["text"] = "نص عربي يذكر فيلمور " + str(i)
            case 6:
                record["text"] += " [citation needed] [bold]not markup[/bold]"
            case 7:
                record["meta_list"], record["meta_obj"] = [1, "two", None], {"nested": {"deep": [True]}}
        records.append(record)
    return records


def test_thousand_malformed_records_are_reported_and_valid_ones_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FACTORY_INGEST__MAX_DOC_CHARS", str(MAX_CHARS))
    rng = random.Random(SEED)
    good = _good_records(GOOD)
    good_ids = [str(r["id"]) for r in good]
    bad = _bad_records(rng, good_ids)
    # interleave: the good records keep their order and the first 50 come first (a duplicate
    # always follows its original); blank lines are not records and must not be reported
    items: list[tuple[bytes, str | None]] = [(json.dumps(r, ensure_ascii=False).encode("utf-8"), None) for r in good]
    for line, kind in bad:
        items.insert(rng.randint(50, len(items)), (line, kind))
    # first of all, a bad record whose id looks like Rich markup: its message is printed
    items.insert(0, (json.dumps({"id": MARKUP_ID, "text": ""}).encode(), "empty_text"))
    out: list[bytes] = []
    expected: dict[int, str] = {}
    for line, kind in items:
        if len(out) % 97 == 96:
            out.append(b"   ")
        out.append(line)
        if kind is not None:
            expected[len(out)] = kind  # 1-based line number
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\n".join(out) + b"\n")
    assert len(expected) == BAD

    started = time.monotonic()
    result = CliRunner().invoke(app, ["ingest", "--corpus", str(corpus), "--lang", "en", "--store",
                                      str(tmp_path / "store"), "--no-entities"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output[-3000:]

    store = Store(tmp_path / "store")
    errors = store.query("SELECT source, line, doc_id, error FROM ingest_errors ORDER BY line")
    found = {r["line"]: r["error"].split(":", 1)[0] for r in errors}
    by_kind: dict[str, int] = {}
    for kind in expected.values():
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(json.dumps({"lines": len(out), "bad": BAD, "good": GOOD, "bytes": corpus.stat().st_size,
                      "by_kind": by_kind, "ingest_s": round(elapsed, 2)}))

    # one error row per bad record, on its line, with the right kind; none for good or blank lines
    assert len(errors) == BAD
    assert {r["source"] for r in errors} == {str(corpus)}
    assert found == expected
    assert all(r["error"].split(":", 1)[1].strip() for r in errors)  # each says what is wrong
    # every valid record stored, under its id, with its exact text
    docs = store.query("SELECT doc_id, title FROM documents")
    assert sorted(d["doc_id"] for d in docs) == sorted(good_ids)
    texts = {r["doc_id"]: r["text"] for r in store.query(
        "SELECT c.doc_id, string_agg(c.text, ' ' ORDER BY c.n) AS text FROM chunks c GROUP BY c.doc_id")}
    for record in good:
        assert re.sub(r"\s+", " ", texts[str(record["id"])]).strip() == re.sub(r"\s+", " ", record["text"]).strip()
    # the messages a person sees: file:line and what, one per line, and the rest counted
    shown = [line for line in result.output.splitlines() if line.startswith("skipped ")]
    assert len(shown) == 20 and all(re.match(rf"skipped {re.escape(str(corpus))}:\d+: \S", s) for s in shown)
    assert f"and {BAD - 20} more (table ingest_errors)" in result.output
    assert f"{corpus}:1: document {MARKUP_ID!r} has empty text" in result.output
