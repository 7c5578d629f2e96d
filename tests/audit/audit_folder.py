"""A tiny hand-made BEIR folder (invented facts) for the audit tests.

Passages about an invented salt port, its lighthouse, the engineer who designed it and
his aqueduct; a few unrelated ones. Questions cover what an audit must tell apart: a
single-hop question that copies its passage (shortcut), a multi-hop one that does not,
one without an answer, one judged against a passage missing from the corpus, one that
names its bridge entity (leakage), one with a decorative passage (necessity), and one
without any judgement.
"""

from __future__ import annotations

import json
from pathlib import Path

PASSAGES = [
    ("d1_0", "d1", "Marrowick", "Marrowick is a river port on the Ashen estuary, known for its salt warehouses and a "
     "lighthouse built in 1842."),
    ("d1_1", "d1", "Marrowick", "The lighthouse of the town was designed by the engineer Tobias Quell, who later "
     "moved to Dunhallow."),
    ("d2_0", "d2", "Tobias Quell", "Tobias Quell was an engineer trained in Dunhallow. His last work was the Greyfen "
     "aqueduct, finished in 1861."),
    ("d3_0", "d3", "Greyfen aqueduct", "The Greyfen aqueduct carries water across the Lorn valley on forty-two stone "
     "arches."),
    ("d4_0", "d4", "Lorn valley", "The Lorn valley is a farming region famous for its blue cheese and slate quarries."),
    ("d5_0", "d5", "Ostberg", "Ostberg is a market town whose rye bread is baked in clay ovens every Thursday."),
    ("d6_0", "d6", "Vellamy choir", "The Vellamy choir sings at the winter fair of Saint Orin in a wooden hall."),
    ("d7_0", "d7", "Pike lake", "Pike lake freezes early in November and hosts a skating race for children."),
    ("d8_0", "d8", "Harrow mill", "Harrow mill ground barley for three villages until a flood broke its wheel."),
    ("d9_0", "d9", "Saint Orin's fair", "Saint Orin's fair sells honey, wool and carved spoons each December."),
]

QUERIES = [
    # copies its passage: one broad query finds it
    {"_id": "q1", "text": "Which river port on the Ashen estuary is known for its salt warehouses?",
     "answer": "Marrowick"},
    # three hops, worded away from the passages
    {"_id": "q2", "text": "How many supports does the final structure by the designer of the beacon stand on?",
     "answers": ["forty-two", "42"], "bridge_entities": ["Tobias Quell", "Greyfen aqueduct"]},
    # no answer given
    {"_id": "q3", "text": "What did the engineer trained in Dunhallow finish in 1861?"},
    # judged against a passage that is not in the corpus
    {"_id": "q4", "text": "Which choir sings at the winter fair?", "answer": "Vellamy choir"},
    # names its bridge entity; the second judged passage is decorative
    {"_id": "q5", "text": "Across which valley does the aqueduct finished by Quell carry water?",
     "answer": "Lorn valley", "metadata": {"bridge_entities": ["Tobias Quell"]}},
    # no judgement at all
    {"_id": "q6", "text": "When does Pike lake freeze?", "answer": "November"},
]

QRELS = [
    ("q1", "d1_0", 1),
    ("q2", "d1_1", 1), ("q2", "d2_0", 1), ("q2", "d3_0", 1),
    ("q3", "d2_0", 1),
    ("q4", "d99_0", 1),
    ("q5", "d3_0", 1), ("q5", "d4_0", 1),
    ("q1", "d5_0", 0),  # a negative judgement is not support
]

# what the scripted reader needs in its evidence to answer, per question
NEEDS = {"q1": {"d1_0"}, "q2": {"d1_1", "d2_0", "d3_0"}, "q3": {"d2_0"}, "q4": {"d6_0"}, "q5": {"d3_0"}}


def write_folder(root: Path, *, qrels_name: str = "qrels/test.tsv", extra_passages: list[tuple] = ()) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for cid, doc, title, text in [*PASSAGES, *extra_passages]:
            handle.write(json.dumps({"_id": cid, "title": title, "text": text, "doc_id": doc}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as handle:
        for query in QUERIES:
            handle.write(json.dumps(query) + "\n")
    path = root / qrels_name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        handle.writelines(f"{q}\t{c}\t{s}\n" for q, c, s in QRELS)
    return root
