"""Where the composer's shared-word budget comes from: distinctive words shared with a hidden passage, by BM25 verdict.

    python -m bench.shared_words [--langs en,ru] [--sets draw3,,dense,draw5,draw6] [--work DIR]

For every hand-written reference draft (first drafts and revisions) that reached the
broad-query check and has a hidden passage, it counts the question's words (as the BM25
index analyses them) that also occur in a hidden passage and in at most a share ``s`` of
the index's passages, taking the largest count over the hidden passages. Each draft is
labelled by the BM25 searcher's figures recorded in its shortcut verdict (refused when the
hidden answer passage or every support passage was in the top 10). For each share and
budget it prints how many kept drafts stay within the budget and how many refused drafts
exceed it: ``composer.DISTINCTIVE_SHARE`` (per language) and ``SHARED_WORDS_MAX`` were chosen from this
table. The sets are fixture names as in ``bench.acceptance --set`` (empty: draw 4). The
last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.acceptance import fixture, prepare
from bench.common import ROOT

SHARES = (0.02, 0.05, 0.1, 0.2)
BUDGETS = (1, 2, 3, 4)


def draft_rows(lang: str, names: list[str], index: Any) -> list[tuple[bool, list[int]]]:
    """(refused by BM25, shared counts per share) for every draft judged by the shortcut check."""
    from factory.contract import seed_chunks
    from factory.records import Subgraph

    bm25 = index.searcher("bm25")
    caps = [int(s * len(bm25.chunk_ids)) for s in SHARES]
    terms = {}
    rows = []
    for name in names:
        for line in fixture(lang, name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["status"] != "drafted":
                continue
            sub = Subgraph.model_validate(row["subgraph"])
            hidden = [c for c in sub.chunk_ids if c not in seed_chunks(sub)]
            for c in hidden:
                terms.setdefault(c, set(bm25.analyzer(index.index_text(c))))
            for draft, verdicts in zip(row["drafts"], row["verdicts"]):
                shortcut = [v for v in verdicts if v["validator"] == "shortcut" and not v.get("skipped")]
                figures = shortcut[0]["figures"] if shortcut else {}
                found = figures.get("searchers", {}).get("bm25")
                if not hidden or not found:
                    continue
                refused = found.get("answer_rank") is not None or found.get("support_in_top") == figures.get("support")
                words = list(dict.fromkeys(bm25.analyzer(draft["question"])))
                counts = [max(sum(1 for t in words if t in terms[c] and bm25.scorer.doc_freq(t) <= cap)
                              for c in hidden) for cap in caps]
                rows.append((refused, counts))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", default="en,ru")
    parser.add_argument("--sets", default="draw3,,dense,draw5,draw6", help="fixture sets (empty name: draw 4)")
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "acceptance")
    args = parser.parse_args()
    summary: dict[str, Any] = {}
    for lang in args.langs.split(","):
        _, index, _ = prepare(lang, args.work)
        rows = draft_rows(lang, args.sets.split(","), index)
        refused = sum(r for r, _ in rows)
        kept = len(rows) - refused
        print(f"{lang}: {len(rows)} drafts, BM25 kept {kept}, refused {refused}")
        print("share  budget  kept within  refused over")
        grid = {}
        for i, share in enumerate(SHARES):
            for budget in BUDGETS:
                within = sum(1 for r, c in rows if not r and c[i] <= budget)
                over = sum(1 for r, c in rows if r and c[i] > budget)
                grid[f"{share}/{budget}"] = {"kept_within": within, "refused_over": over}
                print(f"{share:5.2f}  {budget:6d}  {within:4d}/{kept:<4d}  {over:4d}/{refused}")
        summary[lang] = {"drafts": len(rows), "kept": kept, "refused": refused, "grid": grid}
    print(json.dumps({"sets": args.sets, **summary}))


if __name__ == "__main__":
    main()
