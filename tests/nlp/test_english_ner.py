"""English NER: only the ner component, pinned model files, sane entities on the fixture corpus."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from factory.nlp.models import EN_MANIFEST, ModelIntegrityError, english_model_dir, load_pipeline, verify_files
from factory.nlp.pipeline import doc_mentions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_only_ner_is_loaded() -> None:
    assert load_pipeline("en").pipe_names == ["ner"]


def test_a_changed_model_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(english_model_dir(), copy)
    verify_files(copy, EN_MANIFEST, "copy")  # identical files pass
    with open(copy / "ner" / "model", "r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelIntegrityError, match="ner/model"):
        verify_files(copy, EN_MANIFEST, "copy")
    (copy / "config.cfg").unlink()
    with pytest.raises(ModelIntegrityError, match="config.cfg missing"):
        verify_files(copy, EN_MANIFEST, "copy")


def test_fixture_corpus_entities() -> None:
    docs = [json.loads(line) for line in (FIXTURES / "corpus_en.jsonl").read_text(encoding="utf-8").splitlines()]
    nlp = load_pipeline("en")
    mentions = [m for doc in nlp.pipe([d["text"] for d in docs]) for m in doc_mentions(doc, "en")]
    labels = Counter(m["label"] for m in mentions)
    keys = Counter(m["entity_key"] for m in mentions)
    assert len(mentions) > 20 * len(docs) / 2
    assert labels["person"] > 20 and labels["date"] > 20 and labels["number"] > 10
    assert labels["location"] + labels["organization"] > 40
    # names recur across articles under one key (the entity chains the fixtures are built on)
    assert keys["vellmoor"] >= 5
    assert keys["maren oswick"] >= 2
    assert keys["1834"] >= 2 and keys["2020"] >= 2
    # offsets point at the text
    for doc, d in zip(nlp.pipe([d["text"] for d in docs[:5]]), docs[:5]):
        for m in doc_mentions(doc, "en"):
            assert d["text"][m["start"]:m["end"]] == m["text"]
    # dropped: spelled-out counts without a digit, dates without an anchor
    assert not [m for m in mentions if m["label"] == "number" and not any(ch.isdigit() for ch in m["text"])]
