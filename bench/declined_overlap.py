"""Do reselections that mostly repeat the subgraph a candidate declined get written?

    python -m bench.declined_overlap [--langs en,ru]

When a composer declines a subgraph the loop draws another for the same cell. Before the
``DECLINED_OVERLAP`` rule (``factory.graph.select``) it only avoided the exact support set and
the declined answer, so a comparison could come back with two of its three candidates (the
same sports leagues), or a chain with its start passage and another answer. This reads the
hand-labelled reselection rounds of the reference draws made before the rule (not draw 10's
rewrite, whose reselections are draw 10's subgraphs written again) and sorts each
reselection by the largest share of its passages it has in common with a subgraph its
candidate declined before: at least ``DECLINED_OVERLAP``, some, or none; and counts how many
of each its writers declined. Prints one line per language and a final JSON line.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from bench.acceptance import FIXTURES
from bench.common import per_language
from factory.graph.select import DECLINED_OVERLAP, near
from factory.reference.draw import declined
from factory.reference.records import read_reference

_ROUND = re.compile(r"^(?P<lang>en|ru)-draw(?P<n>\d+)(?P<rewrite>-rewrite)?-reselect(?P<k>\d)\.jsonl$")
RULE_FROM = {"en": 16, "ru": 15}  # the first draw whose reselections were drawn with the rule


def rounds(lang: str) -> dict[str, list[str]]:
    """Per draw (its file's stem), its reselection rounds' file names in order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for path in FIXTURES.glob(f"{lang}-draw*-reselect*.jsonl"):
        m = _ROUND.match(path.name)
        if m is None or m["rewrite"] or int(m["n"]) >= RULE_FROM[lang]:
            continue  # a rewrite's reselections are its draw's subgraphs written again: counted once
        out.setdefault(f"{lang}-draw{m['n']}", []).append((int(m["k"]), path.name))
    return {stem: [name for _, name in sorted(found)] for stem, found in sorted(out.items())}


def measure(lang: str) -> dict[str, object]:
    counts: Counter[str] = Counter()
    for stem, later in rounds(lang).items():
        tried: dict[int, set[frozenset[str]]] = {}  # candidate -> the subgraphs it declined so far
        for name in [f"{stem}.jsonl", *later]:
            rows = [c for c in read_reference(FIXTURES / name) if c.subgraph is not None]
            for c in rows if name != f"{stem}.jsonl" else ():
                chunks, before = frozenset(c.subgraph.chunk_ids), tried.get(c.index, set())
                kind = "near" if near(chunks, before) else ("some" if any(chunks & old for old in before) else "none")
                counts[f"{kind}_{'declined' if declined(c) else 'written'}"] += 1
            for c in rows:  # a round's declines count from the next round on
                if declined(c):
                    tried.setdefault(c.index, set()).add(frozenset(c.subgraph.chunk_ids))
    return {"draws": len(rounds(lang)), **{k: counts[k] for k in sorted(counts)}}


def _report(lang: str, found: dict[str, object]) -> None:
    near = found.get("near_declined", 0) + found.get("near_written", 0)
    rest = sum(v for k, v in found.items() if k.startswith(("some_", "none_")))
    rest_declined = found.get("some_declined", 0) + found.get("none_declined", 0)
    print(f"{lang}: {found['draws']} draws' reselections; sharing {DECLINED_OVERLAP:.0%} or more of their passages "
          f"with a declined subgraph: {found.get('near_declined', 0)} of {near} declined; the others: "
          f"{rest_declined} of {rest} declined")


def main() -> None:
    print(json.dumps(per_language(__doc__, measure, _report)))


if __name__ == "__main__":
    main()
