"""Would remembering declined answers have kept later draws from subgraphs no one could write for?

    python -m bench.refused_memory [--langs en,ru]

The generation loop writes the fixed answer of every subgraph its composer declines (or whose
answer a model knew without evidence) to the store's refused_answers, and later runs' selectors
draw none of them (``SelectorParams.avoid_refused``). This reads the hand-labelled reference
draws in the order they were made (draw 4 is ``LANG.jsonl``; a draw's reselection rounds and
rewrites belong to it) and counts, among the subgraphs whose answer an earlier draw had
declined, how many were declined again and how many were written: the memory's precision on
what writers did, and how much of each draw it would have kept out. Draws from draw 15 on
(Russian: 14 on) were drawn with the memory (``bench.reference_draw --remember``) and are
left out. Prints one line per language and a final JSON line.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from bench.acceptance import FIXTURES
from bench.common import per_language
from factory.reference.records import read_reference

_SET = re.compile(r"^(?P<lang>en|ru)(?:-draw(?P<n>\d+)(?:-(?:rewrite|reselect\d|rewrite-reselect\d))*)?\.jsonl$")
MAIN_DRAW = 4  # LANG.jsonl, the first draw of the reference protocol
MEMORY_FROM = {"en": 15, "ru": 14}  # the first draw made with the memory in the store


def draws(lang: str) -> list[tuple[int, str]]:
    """(draw number, file name) of the labelled draws made without the memory, oldest first."""
    out = []
    for path in FIXTURES.glob(f"{lang}*.jsonl"):
        m = _SET.match(path.name)
        if m is None or m["lang"] != lang:
            continue  # agreement, dense, operand and comparison sets rewrite subgraphs of a draw
        n = int(m["n"]) if m["n"] else MAIN_DRAW
        if n < MEMORY_FROM[lang]:
            out.append((n, path.name))
    return sorted(out)


def measure(lang: str) -> dict[str, object]:
    first_declined: dict[str, int] = {}  # answer key -> the draw that first declined it
    counts: Counter[str] = Counter()
    per_draw: dict[int, Counter[str]] = {}
    by_draw: dict[int, list[tuple[str, str]]] = {}  # draw -> (fixed answer, status) of its subgraphs
    for n, name in draws(lang):
        by_draw.setdefault(n, []).extend((c.subgraph.answer_entity, c.status) for c in read_reference(FIXTURES / name)
                                         if c.subgraph is not None and c.subgraph.answer_entity)
    for n in sorted(by_draw):
        seen = per_draw.setdefault(n, Counter())
        for answer, st in by_draw[n]:
            status = "written" if st == "drafted" else "declined"
            seen[status] += 1
            earlier = first_declined.get(answer)
            if earlier is not None and earlier < n:
                counts[f"remembered_{status}"] += 1
                seen[f"remembered_{status}"] += 1
        for answer, st in by_draw[n]:  # a draw's own declines are remembered from the next draw on
            if st != "drafted":
                first_declined.setdefault(answer, n)
    remembered = counts["remembered_declined"] + counts["remembered_written"]
    return {"draws": len(by_draw), "remembered": remembered, "declined_again": counts["remembered_declined"],
            "written": counts["remembered_written"],
            "precision": round(counts["remembered_declined"] / remembered, 3) if remembered else None,
            "per_draw": {n: dict(c) for n, c in per_draw.items()}}


def _report(lang: str, found: dict[str, object]) -> None:
    print(f"{lang}: {found['draws']} draws; {found['remembered']} fixed-answer subgraphs had an answer an earlier "
          f"draw declined: {found['declined_again']} declined again, {found['written']} written")
    for n, c in found["per_draw"].items():
        print(f"  draw {n:2d}: {c.get('declined', 0) + c.get('written', 0):3d} fixed-answer subgraphs, "
              f"{c.get('remembered_declined', 0) + c.get('remembered_written', 0):2d} with a remembered answer "
              f"({c.get('remembered_written', 0)} written)")


def main() -> None:
    summary = per_language(__doc__, measure, _report)
    print(json.dumps({lang: {k: v for k, v in s.items() if k != "per_draw"} for lang, s in summary.items()}))


if __name__ == "__main__":
    main()
