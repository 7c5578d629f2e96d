"""The measurement behind the store's memory of refused answers (``bench.refused_memory``): over
the hand-labelled reference draws, in the order they were made, a subgraph whose answer an
earlier draw declined is declined again; the figures the migration and the README quote hold."""

from __future__ import annotations

from bench.refused_memory import MEMORY_FROM, draws, measure


def test_answers_declined_before_are_declined_again() -> None:
    en, ru = measure("en"), measure("ru")
    assert (en["remembered"], en["declined_again"], en["written"]) == (63, 60, 3)
    assert (ru["remembered"], ru["declined_again"], ru["written"]) == (12, 12, 0)
    assert en["per_draw"][14] == {"declined": 52, "written": 16, "remembered_declined": 18, "remembered_written": 1}


def test_draws_made_with_the_memory_are_left_out() -> None:
    names = [name for _, name in draws("en")]
    assert "en.jsonl" in names and "en-draw14-reselect2.jsonl" in names
    assert not any(n >= MEMORY_FROM["en"] for n, _ in draws("en"))
    assert not any(n >= MEMORY_FROM["ru"] for n, _ in draws("ru"))
    assert not any(name.startswith(("en-dense", "en-agree", "en-comparisons", "en-draw10-operands")) for name in names)
