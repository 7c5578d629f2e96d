"""Scoring a store's entity identities against a gold set of mention clusters.

A gold set (``tests/fixtures/identity_gold_<lang>.jsonl``) is JSON lines: a header
``{"corpus", "lang", "apart": [[cluster_a, cluster_b, why], ...]}``, then one cluster
per line ``{"id", "label", "mentions": [[chunk_id, start, end, text], ...]}``: mentions
that refer to one entity, found by NER in an ingest of the named corpus. ``apart``
lists clusters that must never share an identity (namesakes, a city and its region).

``score_identities`` reads ``mention_identities`` (or, for the figure before corpus
linking, any column of ``current_mentions`` such as ``entity_key``) and returns:

* ``pair_recall``: of all pairs of gold mentions in one cluster, the share whose two
  mentions are stored with the same identity (a gold mention the store lacks shares
  nothing);
* ``shared_identity_share``: of the identities given to gold mentions, the share
  given to mentions of two or more clusters;
* ``apart_kept`` / ``apart_violations``: the ``apart`` pairs that share no identity;
* ``coverage``, per-cluster ``macro_pair_recall`` and the counts behind each figure.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.errors import FactoryError


class GoldError(FactoryError):
    pass


@dataclass(frozen=True)
class GoldCluster:
    id: str
    label: str
    mentions: tuple[tuple[str, int, int, str], ...]  # chunk_id, start, end, text


@dataclass(frozen=True)
class GoldSet:
    corpus: str
    lang: str
    clusters: tuple[GoldCluster, ...]
    apart: tuple[tuple[str, str, str], ...] = ()
    path: str = ""

    def doc_ids(self) -> list[str]:
        """Documents the gold mentions come from (a chunk id is ``<doc_id>_<n>``)."""
        return sorted({chunk.rsplit("_", 1)[0] for c in self.clusters for chunk, *_ in c.mentions})


def load_gold(path: str | Path) -> GoldSet:
    """Read a gold set; a malformed line is an error naming the file and line."""
    path = Path(path)
    clusters: list[GoldCluster] = []
    header: dict[str, Any] | None = None
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if header is None:
                    header = record
                    continue
                mentions = tuple((str(c), int(s), int(e), str(t)) for c, s, e, t in record["mentions"])
                clusters.append(GoldCluster(str(record["id"]), str(record["label"]), mentions))
            except (ValueError, KeyError, TypeError) as exc:
                raise GoldError(f"{path}:{number}: not a gold record ({exc})") from exc
    if header is None or not clusters:
        raise GoldError(f"{path}: no gold clusters")
    ids = Counter(c.id for c in clusters)
    if dupes := [i for i, n in ids.items() if n > 1]:
        raise GoldError(f"{path}: cluster ids repeated: {dupes[:5]}")
    apart = tuple((str(a), str(b), str(why)) for a, b, why in header.get("apart", []))
    if unknown := [x for a, b, _ in apart for x in (a, b) if x not in ids]:
        raise GoldError(f"{path}: apart names unknown clusters: {unknown[:5]}")
    return GoldSet(str(header.get("corpus", "")), str(header.get("lang", "")), tuple(clusters), apart, str(path))


def stored_identities(store: Any, column: str = "identity") -> dict[tuple[str, int, int], str]:
    """(chunk_id, start, end) -> identity, from ``mention_identities`` or, for another
    ``column`` (``entity_key``), from ``current_mentions``."""
    if column == "identity":
        sql = 'SELECT chunk_id, start, "end", identity FROM mention_identities'
    elif column == "entity_key":
        sql = 'SELECT chunk_id, start, "end", entity_key FROM current_mentions'
    else:
        raise GoldError(f"unknown identity column {column!r} (identity or entity_key)")
    return {(c, s, e): v for c, s, e, v in (tuple(r.values()) for r in store.query(sql))}


PER_FORM = 3  # the balanced sample: at most this many mentions of each surface form per cluster


def balanced(cluster: GoldCluster, per_form: int = PER_FORM) -> list[tuple[str, int, int, str]]:
    """At most ``per_form`` mentions of each surface form (case folded), from distinct
    documents first: a frequent inflection («России») weighs no more than a rare variant
    («Российской Федерации»), so the pair figure measures how forms are linked."""
    by_form: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    for mention in sorted(cluster.mentions):
        by_form[" ".join(mention[3].casefold().split())].append(mention)
    out = []
    for mentions in by_form.values():
        seen: set[str] = set()
        first = [m for m in mentions if not (m[0].rsplit("_", 1)[0] in seen or seen.add(m[0].rsplit("_", 1)[0]))]
        rest = [m for m in mentions if m not in first]
        out.extend((first + rest)[:per_form])
    return sorted(out)


def _pairs(groups: list[list[str | None]]) -> dict[str, Any]:
    """Pair counts over clusters given as the identities of their mentions (None: not stored)."""
    pairs = shared = 0
    per_cluster = []
    for identities in groups:
        n = len(identities)
        found = Counter(i for i in identities if i is not None)
        both = sum(k * (k - 1) // 2 for k in found.values())
        pairs += n * (n - 1) // 2
        shared += both
        if n > 1:
            per_cluster.append(both / (n * (n - 1) // 2))
    return {
        "mentions": sum(len(g) for g in groups),
        "same_entity_pairs": pairs,
        "pairs_sharing_identity": shared,
        "pair_recall": round(shared / pairs, 4) if pairs else 0.0,
        "macro_pair_recall": round(sum(per_cluster) / len(per_cluster), 4) if per_cluster else 0.0,
    }


def score_identities(store: Any, gold: GoldSet, column: str = "identity",
                     identities: dict[tuple[str, int, int], str] | None = None) -> dict[str, Any]:
    """Pair figures of the store's identities on the gold set (see the module docstring).

    ``pair_recall`` and its counts are over the balanced sample (``balanced``);
    ``all_mentions`` holds the same figures over every gold mention. Shared identities
    and the ``apart`` pairs are always over every gold mention.
    """
    if identities is None:
        identities = stored_identities(store, column)
    clusters_of: dict[str, set[str]] = defaultdict(set)
    matched = total = 0
    for cluster in gold.clusters:
        for chunk, start, end, _ in cluster.mentions:
            total += 1
            identity = identities.get((chunk, start, end))
            if identity is not None:
                matched += 1
                clusters_of[identity].add(cluster.id)
    every = _pairs([[identities.get(m[:3]) for m in c.mentions] for c in gold.clusters])
    sample = _pairs([[identities.get(m[:3]) for m in balanced(c)] for c in gold.clusters])
    shared_ids = sorted(i for i, cs in clusters_of.items() if len(cs) > 1)
    violations = [
        {"a": a, "b": b, "why": why, "identities": sorted(i for i in shared_ids if {a, b} <= clusters_of[i])}
        for a, b, why in gold.apart
        if any({a, b} <= clusters_of[i] for i in shared_ids)
    ]
    return {
        "gold": Path(gold.path).name if gold.path else gold.corpus,
        "column": column,
        "clusters": len(gold.clusters),
        "coverage": round(matched / total, 4) if total else 0.0,
        **sample,
        "all_mentions": every,
        "identities": len(clusters_of),
        "identities_shared": len(shared_ids),
        "shared_identity_share": round(len(shared_ids) / len(clusters_of), 4) if clusters_of else 0.0,
        "shared_identities": {i: sorted(clusters_of[i]) for i in shared_ids},
        "apart_pairs": len(gold.apart),
        "apart_kept": len(gold.apart) - len(violations),
        "apart_violations": violations,
    }
