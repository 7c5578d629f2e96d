"""Ids in TREC files, which split lines on whitespace.

A chunk or query id may hold spaces (a text file's relative path, a user's own ids); in
``qrels.trec`` and the ``run.*.trec`` files such ids are written with whitespace and
``%`` percent-encoded (UTF-8), so every line keeps its columns and the id round-trips.
Ids without whitespace or ``%`` (all ids the factory makes itself) are written as they
are. The BEIR files (``qrels/test.tsv``, ``corpus.jsonl``) keep ids unchanged.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

_UNSAFE = re.compile(r"[\s%]")


def trec_id(value: str) -> str:
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), str(value))


def from_trec_id(value: str) -> str:
    return unquote(value) if "%" in value else value
