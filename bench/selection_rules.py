"""What each selection rule would have dropped from the hand-labelled reference draws.

    python -m bench.selection_rules --store STORE --lang en [--sets draw1,draw2]

STORE is the ingested store (with entities and statistics) the draws were drawn from.
Every subgraph of the named reference fixtures (tests/fixtures/reference_drafts/
LANG-SET.jsonl) was labelled by its writer: an honest question was written for it, or
none could be. For each subgraph the rules of factory/graph/selectors/ are applied as
the selectors apply them, and the first rule that refuses it is counted against that
label, so a rule that drops honest subgraphs shows up as plainly as one that drops the
others. Rules, in order:

* sense: a bridge (chain, temporal, calculation), the answer or a clue (intersection) that
  carries another NER label in one of its chunks, that a chunk only cites as its source, or
  a person a chunk's document calls by one word that several full names hold ('Барак');
* comparison: candidates of different kinds by their articles' first sentences, or any
  comparison where documents are not articles;
* rival: an intersection whose clue passage names no other thing of the answer's kind;
* related: a hidden answer whose name shares its words with a name the question may use, or
  a chain's start that shares its words with a hidden bridge (by stem or by lemma).
* dated: all the dates of a temporal chunk or a compared candidate's chunk are ones it gives
  only as when a figure held ('as of 2021', '69.1 million in 2026': ``SelectionIndex.values``;
  a calculation may still compute with the figure such a date belongs to).
* kind: an answer whose name says it is another kind of thing than its label (an award
  tagged as a work, or its stem, 'Nobel'; a polity tagged as an organisation, 'the Emirate
  of Granada': ``SelectionIndex.other_kind``).
* fragment: an answer every mention of which is a piece of a longer name ('Jean Léopold' of
  Cuvier's full name, 'Portuguese War' of 'the Spanish-Portuguese War': ``Cues.fragment``).
* doubt: an answer NER reads as another kind in a third or more of its chunks
  (``SelectionIndex.label_in_doubt``: 'Mozambique' an organisation and a place).
* unattested: a `work` or `organization` answer the text never calls one, or a `person` it
  puts only among places and things (``SelectionIndex.attested``: 'Nobel' of 'Nobel laureate',
  the Alchon Huns, an epithet in quotes; 'Mellon', 'the Left Bank of the Seine' as
  organisations; 'Morne Diablotins', 'Canis Minor' as persons).
* article: in a corpus of articles, an answer that is an article's subject, also where the
  article's first sentence names it in full ('Ansel Easton Adams' of 'Ansel Adams').
* listed: a chain's or a temporal chain's answer that its passage only lists among three or
  more names ('nine authors: ..., Sebastian Faulks, ...': ``SelectionIndex.singled_out``).
* met: an intersection clue that another document names together with the answer ('Kant' and
  Königsberg): the clue alone gives the answer away (``intersection._meets_only_in``).

Draws made after a rule existed cannot show what it drops (the selector never drew what
it refuses): pass only the draws made before it. Prints one JSON line per set and a
summary line.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from bench.acceptance import fixture


def _undated(ix: Any, mechanic: str, sub: dict[str, Any], pos: dict[str, int]) -> bool:
    """A date the subgraph computes, orders or compares with that the chunk gives only as when a
    figure held (``SelectionIndex.values`` no longer offers it)."""
    figures = sub.get("figures") or {}
    if figures.get("value_kind", "date") != "date":
        return False

    def usable(chunk_id: str) -> set[str]:
        c = pos.get(chunk_id)
        return set() if c is None else {ix.ent_name[e] for e in ix.values(c, {"date"})}

    if mechanic == "temporal":
        return any(not usable(c) for c in sub["chunk_ids"])
    if mechanic == "comparison":
        own = [c for c, role in sub["roles"].items() if role == "candidate"]
        return any(not usable(c) for c in own)
    return False


def first_refusal(ix: Any, row: dict[str, Any]) -> str | None:
    """The first rule that refuses the reference row's subgraph, or None."""
    from factory.graph.selectors.base import NAMED_LABELS
    from factory.graph.selectors.intersection import _meets_only_in, _rival_in

    sub = row["subgraph"]
    mechanic = row["cell"].split("/")[0]
    pos = {c: i for i, c in enumerate(ix.chunk_ids)}
    chunks = [pos[c] for c in sub["chunk_ids"] if c in pos]
    key = ix.key_index
    answer = key(sub["answer_entity"]) if sub["answer_entity"] else None
    if mechanic in ("chain", "temporal", "calculation"):
        for (a, b), bridge in zip(zip(chunks, chunks[1:]), sub["bridge_entities"]):
            e = key(bridge)
            if e is not None and not ix.same_sense(e, a, b):
                return "sense"
    elif mechanic == "intersection":
        clues = [key(k) for k in sub["constraint_entities"]]
        if answer is not None and not all(ix.plain(c, answer) for c in chunks):
            return "sense"
        if any(x is not None and not ix.plain(c, x) for c, x in zip(chunks, clues)):
            return "sense"
        if answer is not None and not all(_rival_in(ix, c, answer) for c in chunks):
            return "rival"
    elif mechanic == "comparison":
        if not ix.of_articles():
            return "comparison"
        kinds = {ix.category(key(k)) for k in sub["bridge_entities"]}
        if len(kinds) > 1 or None in kinds:
            return "comparison"
    if answer is not None:
        named = [key(k) for k in sub["constraint_entities"] + sub["bridge_entities"]]
        if any(e is not None and ix.related(answer, e) for e in named):
            return "related"
    if mechanic in ("chain", "temporal", "calculation"):  # the start may not share a bridge's name
        starts = [key(k) for k in sub["constraint_entities"]]
        bridges = [key(k) for k in sub["bridge_entities"]]
        if any(s is not None and b is not None and ix.related(s, b) for s in starts for b in bridges):
            return "related"
    if _undated(ix, mechanic, sub, pos):
        return "dated"
    if answer is not None and ix.other_kind(answer):
        return "kind"
    if answer is not None and answer in ix.fragments:
        return "fragment"
    if answer is not None and ix.ent_label[answer] in NAMED_LABELS and ix.label_in_doubt(answer):
        return "doubt"
    if answer is not None and not ix.attested(answer):
        return "unattested"
    if answer is not None and mechanic != "comparison" and ix.of_articles() and answer in ix.article_subjects():
        return "article"
    if answer is not None and mechanic in ("chain", "temporal"):
        last = [pos[c] for c, role in sub["roles"].items() if role == "answer" and c in pos]
        if last and not ix.singled_out(last[0], answer):
            return "listed"
    if answer is not None and mechanic == "intersection":
        clues = [key(k) for k in sub["constraint_entities"]]
        if any(x is not None and not _meets_only_in(ix, x, answer, c) for c, x in zip(chunks, clues)):
            return "met"
    return None


def main() -> None:
    from factory.graph.selectors.base import SelectionIndex
    from factory.store import Store

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--lang", required=True, choices=["en", "ru"])
    parser.add_argument("--sets", default="draw1,draw2", help="fixture sets drawn before the rules (main: LANG.jsonl, draw 4)")
    args = parser.parse_args()
    ix = SelectionIndex.load(Store(args.store, create=False), args.lang)
    total: Counter[str] = Counter()
    for name in args.sets.split(","):
        counts: Counter[str] = Counter()
        path = fixture(args.lang, name)
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["status"] == "no_subgraph":
                continue
            label = "honest" if row["status"] == "drafted" else "no_honest"
            rule = first_refusal(ix, row)
            counts[f"{label}"] += 1
            if rule:
                counts[f"{label}_dropped"] += 1
                counts[f"{label}_dropped_by_{rule}"] += 1
        total.update(counts)
        print(json.dumps({"lang": args.lang, "set": name, **dict(sorted(counts.items()))}))
    print(json.dumps({"lang": args.lang, "sets": args.sets, **dict(sorted(total.items()))}))


if __name__ == "__main__":
    main()
