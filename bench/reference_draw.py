"""Draw the reference candidates and write the worksheets their drafts are written from.

    python -m bench.reference_draw --lang en --store STORE --n 40 --seed 19 \
        --fixture tests/fixtures/reference_drafts/en.jsonl --worksheets /tmp/ref-en
    python -m bench.reference_draw --lang en --fixture ... --worksheets /tmp/ref-en --attach /tmp/ref-en/drafts.jsonl --first
    python -m bench.reference_draw --lang en --fixture ... --worksheets /tmp/ref-en/rev1 --revise [--dense]
    python -m bench.reference_draw --lang en --fixture LANG-dense.jsonl --fork LANG.jsonl --worksheets -
    python -m bench.reference_draw --lang en --fixture LANG-draw10-rewrite.jsonl --fork LANG-draw10.jsonl --blank \
        --worksheets /tmp/ref-en-rw
    python -m bench.reference_draw --lang en --fixture ... --attach /tmp/ref-en/rev1/drafts.jsonl
    python -m bench.reference_draw --lang en --fixture ... --worksheets /tmp/ref-en --briefs 4 [--revision]
    python -m bench.reference_draw --lang en --store STORE --reselect draw10 \
        --fixture tests/fixtures/reference_drafts/en-draw10-reselect1.jsonl --worksheets /tmp/ref-en-r1

STORE is an ingested store (with entities) of the shared corpus. The fixture gets one
line per candidate in draw order, with no drafts yet; each worksheet shows a writer
what the composer sees for that candidate: the cell's guidance, the passages under the
labels the composer uses, and the contract (what may be named, what must be hidden,
which passages each side reaches). Worksheets hold corpus text, so they stay outside
the repository. An existing fixture is never overwritten (its drafts are the record).

``--briefs N`` splits a worksheet folder among N writers and writes each one's brief
(``brief-K.md``, from ``bench/reference_briefs/``): what to read, the honesty rules (write
from the worksheet alone, never test a draft against the checks, record a subgraph with no
honest question as such), the JSON line format ``--attach`` reads, and its worksheets.
The same brief for every draw keeps the writers, the measuring instrument, alike.

``--remember SET,...`` first writes the declined answers of those fixture sets into the store's
refused_answers, as a factory that had drafted them would hold them; the selectors then draw
none of them (``SelectorParams.avoid_refused``), and each fixed-answer subgraph records how many
were kept out (``figures.refused_answers``). Draws before draw 15 were made without it.

``--reselect DRAW[,ROUND1,...]`` (fixture sets, named as ``bench.acceptance --set`` names them) draws what the generation loop draws next for each candidate
whose writer declined its subgraph or gave up revising it (the composer's decline, which makes
the loop reselect): the same cell, the candidate's own reselection RNG, away from every support
set of the draw and every answer declined. Its fixture holds those candidates under their draw
indices, to be written and judged like a draw's; ``bench.acceptance`` counts a declined
candidate by its reselection's outcome in a separate row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from factory.compose.passages import labels_for
from factory.compose.composer import roles_block, searchable_words
from factory.compose.facts import load_chunk_texts, passages_block
from factory.reference.draw import draw_reference
from factory.reference.records import ReferenceCandidate, write_reference
from factory.settings import load_settings
from factory.store import Store
from factory.taxonomy import load_taxonomy


def worksheet(candidate: ReferenceCandidate, store: Store, taxonomy, vocabulary=None) -> str:
    """What the composer sees for the candidate; ``vocabulary`` (the fixed BM25 index) adds the
    words that would find each hidden passage, as the generation loop tells its composer."""
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
        "## What the question may name and what it must hide\n"
        + roles_block(sub, candidate.lang, searchable_words(sub, texts, candidate.lang, vocabulary)),
    ]) + "\n"


def write_worksheets(candidates, folder: Path, store: Store, taxonomy, vocabulary) -> None:
    """One worksheet per candidate (``LANG-NNN.md``) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for c in candidates:
        (folder / f"{c.lang}-{c.index:03d}.md").write_text(worksheet(c, store, taxonomy, vocabulary), encoding="utf-8")


BRIEFS = Path(__file__).parent / "reference_briefs"
LANGUAGES = {"en": "English", "ru": "Russian: Russian questions, answers and notes"}


def write_briefs(worksheets: Path, lang: str, writers: int, *, revision: bool = False) -> list[Path]:
    """Split the worksheets with a subgraph among ``writers`` briefs (in file order, as even as
    can be) and write ``brief-K.md`` beside them; writer K's JSON lines go to ``drafts-K.jsonl``."""
    from factory.prompts import COMPOSER

    sheets = [p for p in sorted(worksheets.glob(f"{lang}-*.md"))
              if not p.read_text(encoding="utf-8").split("\n\n", 1)[-1].startswith("No subgraph")]
    if not sheets:
        raise SystemExit(f"{worksheets}: no {lang} worksheet with a subgraph")
    template = (BRIEFS / ("revise.md" if revision else "first.md")).read_text(encoding="utf-8")
    writers = max(1, min(writers, len(sheets)))
    out = []
    for k in range(writers):
        mine = sheets[k * len(sheets) // writers:(k + 1) * len(sheets) // writers]
        fill = {"compose": str(COMPOSER.path(lang, "compose_system")), "revise": str(COMPOSER.path(lang, "revise_system")),
                "outfile": str(worksheets / f"drafts-{k}.jsonl"), "worksheets": " ".join(str(p) for p in mine),
                "lang": lang, "language": LANGUAGES[lang]}
        text = template
        for key, value in fill.items():  # not str.format: the brief's JSON examples hold braces
            text = text.replace("{" + key + "}", value)
        path = worksheets / f"brief-{k}.md"
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


def revision_worksheets(fixture: Path, lang: str, out: Path, work: Path, dense: bool = False) -> int:
    """Judge the fixture's latest drafts (the validators that need no model), record each
    draft's verdicts in the fixture, and write a revision worksheet for every candidate the
    gauntlet refused that has had fewer than two revisions: its passages and contract, and
    every draft so far with what the checks found, as the reviser's prompt shows them."""
    from bench.acceptance import model_free, prepare
    from factory.compose.composer import history_block
    from factory.records import FactSheet
    from factory.reference.draw import gave_up
    from factory.reference.judge import judge_candidate, reference_context
    from factory.reference.records import read_reference

    store, index, settings = prepare(lang, work, dense)
    taxonomy = load_taxonomy(settings.compose.taxonomy_dir)
    ctx = reference_context(store, index, settings)
    candidates = read_reference(fixture)
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for cand in candidates:
        judged = judge_candidate(cand, ctx, model_free(settings))
        cand.verdicts = judged.verdicts
        if (judged.accepted_at is not None or cand.status != "drafted" or not cand.drafts or len(cand.drafts) > 2
                or gave_up(cand)):  # no draft yet: its writer has not written it
            continue
        sheet = FactSheet(subgraph=cand.subgraph, facts=[], passages=load_chunk_texts(store, cand.subgraph.chunk_ids))
        history = [(cand.draft(i), judged.verdicts[i]) for i in range(len(cand.drafts))]
        text = worksheet(cand, store, taxonomy, ctx.searchers["bm25"]) + "\n## Your earlier drafts, oldest first, each with what the checks found\n" \
            + history_block(history, sheet, lang) + "\n"
        (out / f"{lang}-{cand.index:03d}.md").write_text(text, encoding="utf-8")
        written += 1
    write_reference(fixture, candidates)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, choices=["en", "ru"])
    parser.add_argument("--store", type=Path, help="an ingested store with entities (for the draw)")
    parser.add_argument("--revise", action="store_true", help="judge the fixture and write revision worksheets")
    parser.add_argument("--attach", type=Path, help="add a writer's revisions (JSON lines) to the fixture")
    parser.add_argument("--dense", action="store_true", help="with --revise: judge with the default searchers "
                        "(BM25, dense and hybrid), so the feedback is theirs")
    parser.add_argument("--fork", type=Path, help="start FIXTURE from this fixture's candidates and first drafts "
                        "(no revisions, no verdicts): the same first drafts, revised under other searchers")
    parser.add_argument("--blank", action="store_true", help="with --fork: the candidates without their drafts or "
                        "labels, and their worksheets, to be written again (under new composer instructions)")
    parser.add_argument("--first", action="store_true", help="with --attach: the rows are first drafts (or "
                        "no_honest_question records)")
    parser.add_argument("--briefs", type=int, help="split the worksheets among this many writers: write their briefs")
    parser.add_argument("--revision", action="store_true", help="with --briefs: the worksheets are revision worksheets")
    parser.add_argument("--reselect", help="comma-separated fixture sets (the draw, then earlier reselection rounds, "
                        "as bench.acceptance --set names them: draw10,draw10-reselect1): draw the loop's reselections "
                        "of the candidates declined in the latest")
    parser.add_argument("--remember", help="comma-separated fixture sets whose declined answers the store's "
                        "refused_answers gets before the draw, as the loop would have written them (draw 15 on)")
    parser.add_argument("--work", type=Path, default=Path("outputs/acceptance"))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--fixture", required=True, type=Path)
    parser.add_argument("--worksheets", required=True, type=Path)
    args = parser.parse_args()
    if args.briefs:
        for path in write_briefs(args.worksheets, args.lang, args.briefs, revision=args.revision):
            print(path)
        return
    if args.fork:
        from factory.reference.records import read_reference

        if args.fixture.exists():
            raise SystemExit(f"{args.fixture} exists: the reference drafts are a record, not regenerated")
        if args.blank:  # the same subgraphs, to be written again from their worksheets
            from factory.reference.draw import unwritten

            forked = unwritten(read_reference(args.fork))
        else:
            forked = [c.model_copy(update={"drafts": c.drafts[:1], "verdicts": []}) for c in read_reference(args.fork)]
        write_reference(args.fixture, forked)
        if args.blank:
            from bench.acceptance import prepare

            store, index, settings = prepare(args.lang, args.work)
            write_worksheets(forked, args.worksheets, store, load_taxonomy(settings.compose.taxonomy_dir),
                             index.searcher("bm25"))
        print(f"{args.fixture}: {len(forked)} candidates {'without drafts' if args.blank else 'with the first drafts'}"
              f" of {args.fork}")
        return
    if args.revise:
        n = revision_worksheets(args.fixture, args.lang, args.worksheets, args.work, args.dense)
        print(f"{n} revision worksheets in {args.worksheets}; verdicts recorded in {args.fixture}")
        return
    if args.attach:
        from factory.reference.draw import attach_first_drafts, attach_revisions
        from factory.reference.records import read_reference

        candidates = read_reference(args.fixture)
        attach = attach_first_drafts if args.first else attach_revisions
        problems = attach(candidates, [json.loads(line) for line in args.attach.read_text(encoding="utf-8").splitlines()
                                       if line.strip()])
        write_reference(args.fixture, candidates)
        print("\n".join(problems) or f"{'first drafts' if args.first else 'revisions'} from {args.attach} added to {args.fixture}")
        return
    if args.store is None:
        raise SystemExit("--store is needed to draw")
    if args.fixture.exists() and not args.reselect:
        raise SystemExit(f"{args.fixture} exists: the reference drafts are a record, not regenerated")
    from bench.acceptance import prepare

    store = Store(args.store, create=False)
    settings = load_settings(None, lang=args.lang, seed=args.seed)
    taxonomy = load_taxonomy(settings.compose.taxonomy_dir)
    if args.remember:
        from factory.reference.draw import remember_refusals
        from factory.reference.records import read_reference

        from bench.acceptance import fixture

        added = sum(remember_refusals(store, read_reference(fixture(args.lang, name)), f"{args.lang}-{name}")
                    for name in args.remember.split(","))
        print(f"refused_answers: {added} answers added from {args.remember}")
    if args.reselect:
        from factory.reference.draw import reselect_reference
        from factory.reference.records import read_reference

        from bench.acceptance import fixture

        rounds = [read_reference(fixture(args.lang, name)) for name in args.reselect.split(",")]
        # an existing round keeps its rows: only candidates declined since (a reviser gave up) are added
        drawn = read_reference(args.fixture) if args.fixture.exists() else []
        candidates = reselect_reference(rounds, store, args.lang, settings, taxonomy, drawn=drawn)
    else:
        drawn = []
        candidates = draw_reference(store, args.lang, args.n, args.seed, settings, taxonomy)
    _, index, _ = prepare(args.lang, args.work)  # the fixed index the checks search
    vocabulary = index.searcher("bm25")
    args.fixture.parent.mkdir(parents=True, exist_ok=True)
    write_reference(args.fixture, sorted([*drawn, *candidates], key=lambda c: c.index))
    write_worksheets(candidates, args.worksheets, store, taxonomy, vocabulary)
    drafted = [c for c in candidates if c.subgraph is not None]
    print(f"{len(candidates)} draws, {len(drafted)} with a subgraph -> {args.fixture}, worksheets in {args.worksheets}")
    for c in candidates:
        print(f"{c.index:3d} {c.cell:40s} {c.status} {len(c.subgraph.chunk_ids) if c.subgraph else ''}")


if __name__ == "__main__":
    main()
