"""How far the reference writers agree on which subgraphs allow an honest question.

    python -m bench.reference_agreement sample --lang en --sets main,draw5,...,draw10 --n 20 \
        --seed 7 --worksheets /tmp/agree-en
    python -m bench.reference_draw --lang en --fixture tests/fixtures/reference_drafts/en-agree-a.jsonl \
        --worksheets /tmp/agree-en --briefs 2      (and -b: a second, separate group of writers)
    python -m bench.reference_draw --lang en --fixture ...en-agree-a.jsonl --worksheets /tmp/agree-en \
        --attach /tmp/agree-en/drafts-0.jsonl --first
    python -m bench.reference_agreement score --lang en --work /work/scratch/acc

Every measured acceptance rate rests on the writers' label: an honest question written, or
"no honest question" (which counts as refused). The draws differ by far more than their
selection rules do (draw 4 had 16 English subgraphs without an honest question, draw 10 had
29), so the label itself is measured here. ``sample`` draws ``n`` subgraphs from earlier
reference draws, half labelled honest and half not, in a random order under new indices (the
writers cannot tell a draw or its label), and writes two fixtures with the same candidates
and no drafts (``LANG-agree-a``/``-b``: two separate groups of writers) and a key
(``LANG-agree-key.json``: where each came from, and its label). ``score`` prints, per pair of
labellings (the original writer and groups a and b), how often they agree and Cohen's kappa,
the share each group finds honest among the originally honest and the originally declined
subgraphs, and how the model-free gauntlet (BM25) takes each group's first drafts. Its last
line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bench.acceptance import FIXTURES, fixture

GROUPS = ("a", "b")


def _key_path(lang: str) -> Path:
    return FIXTURES / f"{lang}-agree-key.json"


def honest(status: str) -> bool:
    return status == "drafted"


def sample(lang: str, sets: list[str], n: int, seed: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """``n`` candidates with a subgraph and a writer's label, half of each label (as far as the
    sets hold them), shuffled and renumbered 1..n; and the key back to their source."""
    from factory.reference.draw import unwritten
    from factory.reference.records import read_reference

    pool: dict[bool, list[tuple[str, Any]]] = {True: [], False: []}
    for name in sets:
        for cand in read_reference(fixture(lang, name)):
            if cand.subgraph is not None and cand.status in ("drafted", "no_honest_question"):
                pool[honest(cand.status)].append((name, cand))
    rng = random.Random(seed)
    picked = rng.sample(pool[True], min(n // 2, len(pool[True])))
    picked += rng.sample(pool[False], min(n - len(picked), len(pool[False])))
    rng.shuffle(picked)
    blind, key = [], []
    for number, (name, cand) in enumerate(picked, 1):
        blind.append(unwritten([cand])[0].model_copy(update={"index": number}))
        key.append({"index": number, "set": name, "source_index": cand.index, "status": cand.status})
    return blind, key


def kappa(x: list[bool], y: list[bool]) -> float | None:
    """Cohen's kappa of two binary labellings of the same items (None where chance agreement is 1)."""
    n = len(x)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(x, y)) / n
    px, py = sum(x) / n, sum(y) / n
    chance = px * py + (1 - px) * (1 - py)
    return None if chance >= 1 else round((observed - chance) / (1 - chance), 3)


def agreement(lang: str) -> dict[str, Any]:
    """The labels of the sample's candidates that both groups labelled: counts, pairwise agreement
    and kappa, and each group's honest share among the originally honest and declined ones."""
    from factory.reference.records import read_reference

    key = {row["index"]: row for row in json.loads(_key_path(lang).read_text(encoding="utf-8"))}
    groups = {g: {c.index: c for c in read_reference(fixture(lang, f"agree-{g}"))} for g in GROUPS}
    labelled = sorted(i for i in key if all(groups[g][i].drafts or groups[g][i].status == "no_honest_question"
                                              for g in GROUPS))
    labels = {"original": [honest(key[i]["status"]) for i in labelled]}
    labels.update({g: [honest(groups[g][i].status) for i in labelled] for g in GROUPS})
    pairs = {}
    for x, y in (("original", "a"), ("original", "b"), ("a", "b")):
        agree = sum(p == q for p, q in zip(labels[x], labels[y]))
        pairs[f"{x}~{y}"] = {"agree": agree, "n": len(labelled), "kappa": kappa(labels[x], labels[y])}
    honest_by = {}
    for g in GROUPS:
        for original in (True, False):
            idx = [k for k, i in enumerate(labelled) if labels["original"][k] == original]
            honest_by[f"{g}|{'honest' if original else 'declined'}"] = [sum(labels[g][k] for k in idx), len(idx)]
    return {"lang": lang, "n": len(labelled), "honest": {k: sum(v) for k, v in labels.items()}, "pairs": pairs,
            "honest_by_original": honest_by}


def first_drafts(lang: str, work: Path) -> dict[str, Any]:
    """How the model-free gauntlet (BM25) takes each group's first drafts."""
    from bench.acceptance import model_free, prepare
    from factory.reference.judge import judge_candidate, reference_context
    from factory.reference.records import read_reference

    store, index, settings = prepare(lang, work)
    ctx = reference_context(store, index, settings)
    validators = model_free(settings)
    out = {}
    for g in GROUPS:
        judged = [judge_candidate(c.model_copy(update={"drafts": c.drafts[:1]}), ctx, validators)
                  for c in read_reference(fixture(lang, f"agree-{g}")) if c.drafts]
        out[g] = {"accepted": sum(j.first for j in judged), "drafted": len(judged),
                  "refused": sorted(j.reason for j in judged if not j.first)}
    return out


def main() -> None:
    from factory.reference.records import write_reference

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="draw the blind sample: two fixtures without drafts, a key and the worksheets")
    s.add_argument("--lang", required=True, choices=["en", "ru"])
    s.add_argument("--sets", required=True, help="comma-separated fixture sets (main = LANG.jsonl, draw 4)")
    s.add_argument("--n", type=int, default=20)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--worksheets", required=True, type=Path)
    s.add_argument("--work", type=Path, default=Path("outputs/acceptance"))
    c = sub.add_parser("score", help="agreement between the original writers and the two groups")
    c.add_argument("--lang", required=True, choices=["en", "ru"])
    c.add_argument("--work", type=Path, default=Path("outputs/acceptance"))
    args = parser.parse_args()
    if args.command == "score":
        print(json.dumps(agreement(args.lang) | {"first_drafts_bm25": first_drafts(args.lang, args.work)},
                         ensure_ascii=False))
        return
    from bench.acceptance import prepare
    from bench.reference_draw import write_worksheets
    from factory.taxonomy import load_taxonomy

    targets = [fixture(args.lang, f"agree-{g}") for g in GROUPS] + [_key_path(args.lang)]
    if any(p.exists() for p in targets):
        raise SystemExit(f"{', '.join(str(p) for p in targets if p.exists())} exists: the labels are a record")
    blind, key = sample(args.lang, args.sets.split(","), args.n, args.seed)
    for path in targets[:-1]:
        write_reference(path, blind)
    _key_path(args.lang).write_text("[\n" + ",\n".join(json.dumps(row, ensure_ascii=False) for row in key) + "\n]\n",
                                    encoding="utf-8")
    store, index, settings = prepare(args.lang, args.work)
    write_worksheets(blind, args.worksheets, store, load_taxonomy(settings.compose.taxonomy_dir),
                     index.searcher("bm25"))
    print(f"{len(blind)} candidates -> {', '.join(str(p) for p in targets)}; worksheets in {args.worksheets}")


if __name__ == "__main__":
    main()
