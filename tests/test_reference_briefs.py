"""The writers' briefs for a reference draw: every worksheet with a subgraph goes to exactly
one writer, the placeholders are filled, and the honesty rules are in every brief."""

from __future__ import annotations

import re

from bench.reference_draw import write_briefs


def _sheet(path, body: str) -> None:
    path.write_text(f"# {path.stem}  chain/direct/person\n\n{body}\n", encoding="utf-8")


def test_briefs_split_the_worksheets_and_fill_every_placeholder(tmp_path) -> None:
    for i in range(7):
        _sheet(tmp_path / f"en-{i:03d}.md", "## The kind of question\n...")
    _sheet(tmp_path / "en-007.md", "No subgraph: chain/direct/person: no bridge")
    _sheet(tmp_path / "ru-000.md", "## The kind of question\n...")  # another language: not this draw's
    briefs = write_briefs(tmp_path, "en", 3)
    assert [p.name for p in briefs] == ["brief-0.md", "brief-1.md", "brief-2.md"]
    given = []
    for k, brief in enumerate(briefs):
        text = brief.read_text(encoding="utf-8")
        assert not re.search(r"\{(compose|revise|outfile|worksheets|lang|language)\}", text)
        assert f"drafts-{k}.jsonl" in text and "compose_system.md" in text
        assert "no_honest_question" in text and "do not run the factory's code" in text
        given += re.findall(r"en-\d{3}\.md", text.split("Your worksheets:")[-1])
    assert sorted(given) == [f"en-{i:03d}.md" for i in range(7)]


def test_revision_briefs_name_the_revisers_instructions(tmp_path) -> None:
    _sheet(tmp_path / "ru-004.md", "## Passages\n...")
    brief = write_briefs(tmp_path, "ru", 4, revision=True)
    assert len(brief) == 1
    text = brief[0].read_text(encoding="utf-8")
    assert "revise_system.md" in text and "give_up" in text and "Russian" in text
    assert "from the worksheet alone" in text
