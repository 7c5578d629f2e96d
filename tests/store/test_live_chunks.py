"""A document that shrinks on re-ingest must not leave its old chunks in `chunks`."""

from factory.store import Store


def _chunk(doc: str, n: int, text: str) -> dict:
    return {"chunk_id": f"{doc}_{n}", "doc_id": doc, "n": n, "lang": "en", "text": text, "content_hash": text}


def test_removed_chunks_are_hidden_but_kept(store: Store) -> None:
    store.append("documents", [{"doc_id": "a_b", "lang": "en", "n_chunks": 3}])
    store.append("chunks", [_chunk("a_b", i, f"t{i}") for i in range(3)])
    assert store.scalar("SELECT count(*) FROM chunks") == 3

    store.append("documents", [{"doc_id": "a_b", "lang": "en", "n_chunks": 1}])  # re-ingest: shorter
    store.append("chunks", [_chunk("a_b", 0, "t0 changed")])
    rows = store.query("SELECT chunk_id, text FROM chunks ORDER BY chunk_id")
    assert rows == [{"chunk_id": "a_b_0", "text": "t0 changed"}]
    assert store.scalar("SELECT count(*) FROM chunks__latest") == 3  # nothing deleted


def test_passages_without_a_document_row_are_live(store: Store) -> None:
    store.append("chunks", [_chunk("q1", 0, "passage")])
    assert store.scalar("SELECT count(*) FROM chunks") == 1
