"""Draw the reference candidates and write the worksheets their drafts are written from.

    python -m bench.reference_draw --lang en --store STORE --n 40 --seed 19 \
        --fixture tests/fixtures/reference_drafts/en.jsonl --worksheets /tmp/ref-en

STORE is an ingested store (with entities) of the shared corpus. The fixture gets one
line per candidate in draw order, with no drafts yet; each worksheet shows a writer
what the composer sees for that candidate: the cell's guidance, the passages under the
labels the composer uses, and the contract (what may be named, what must be hidden,
which passages each side reaches). Worksheets hold corpus text, so they stay outside
the repository. An existing fixture is never overwritten (its drafts are the record).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from factory.compose.common import labels_for
from factory.compose.composer import roles_block
from factory.compose.facts import load_chunk_texts, passages_block
from factory.reference import ReferenceCandidate, draw_reference, write_reference
from factory.settings import load_settings
from factory.store import Store
from factory.taxonomy import load_taxonomy


def worksheet(candidate: ReferenceCandidate, store: Store, taxonomy) -> str:
    head = f"# {candidate.lang}-{candidate.index:03d}  {candidate.cell}"
    if candidate.subgraph is None:
        return f"{head}\n\nNo subgraph: {candidate.select_failure}\n"
    sub = candidate.subgraph
    spec = taxonomy.spec(sub.cell, candidate.lang)
    texts = load_chunk_texts(store, sub.chunk_ids)
    titles = {r["chunk_id"]: r["title"] for r in store.query(
        "SELECT chunk_id, title FROM chunks WHERE list_contains(?, chunk_id)", [list(sub.chunk_ids)])}
    labels = "\n".join(f"- {label} = {chunk} (title: {titles.get(chunk, '')!r}, role: {sub.roles.get(chunk)})"
                       for label, chunk in labels_for(sub).items())
    return "\n\n".join([
        head,
        "## The kind of question (the composer's guidance)\n" + spec.guidance(candidate.lang),
        "## Passages\n" + passages_block(sub, texts),
        "## Labels\n" + labels,
        "## What the question may name and what it must hide\n" + roles_block(sub, candidate.lang),
    ]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, choices=["en", "ru"])
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--fixture", required=True, type=Path)
    parser.add_argument("--worksheets", required=True, type=Path)
    args = parser.parse_args()
    if args.fixture.exists():
        raise SystemExit(f"{args.fixture} exists: the reference drafts are a record, not regenerated")
    store = Store(args.store, create=False)
    settings = load_settings(None, lang=args.lang, seed=args.seed)
    taxonomy = load_taxonomy(settings.compose.taxonomy_dir)
    candidates = draw_reference(store, args.lang, args.n, args.seed, settings, taxonomy)
    args.fixture.parent.mkdir(parents=True, exist_ok=True)
    write_reference(args.fixture, candidates)
    args.worksheets.mkdir(parents=True, exist_ok=True)
    for c in candidates:
        (args.worksheets / f"{c.lang}-{c.index:03d}.md").write_text(worksheet(c, store, taxonomy), encoding="utf-8")
    drafted = [c for c in candidates if c.subgraph is not None]
    print(f"{len(candidates)} draws, {len(drafted)} with a subgraph -> {args.fixture}, worksheets in {args.worksheets}")
    for c in candidates:
        print(f"{c.index:3d} {c.cell:40s} {c.status} {len(c.subgraph.chunk_ids) if c.subgraph else ''}")


if __name__ == "__main__":
    main()
