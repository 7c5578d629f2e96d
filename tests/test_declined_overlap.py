"""The measurement behind ``DECLINED_OVERLAP`` (``bench.declined_overlap``): on the reference
draws' reselection rounds made before the rule, a reselection that shares half or more of its
passages with a subgraph its candidate declined was declined again every time."""

from __future__ import annotations

from bench.declined_overlap import RULE_FROM, measure, rounds


def test_reselections_near_a_declined_subgraph_were_declined_again() -> None:
    en, ru = measure("en"), measure("ru")
    assert (en["near_declined"], en.get("near_written", 0)) == (9, 0)
    assert en["none_declined"] + en["some_declined"] == 209
    assert en["none_written"] + en["some_written"] == 73
    assert "near_declined" not in ru and ru["none_declined"] + ru["none_written"] == 139


def test_only_reselections_drawn_before_the_rule_are_read() -> None:
    names = [n for later in rounds("en").values() for n in later]
    assert "en-draw15-reselect2.jsonl" in names and "en-draw10-reselect1.jsonl" in names
    assert not any("rewrite" in n for n in names)  # draw 10's subgraphs written again: counted once
    assert all(int(stem.split("draw")[1].split("-")[0]) < RULE_FROM["en"] for stem in rounds("en"))
