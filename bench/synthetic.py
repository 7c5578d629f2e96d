"""A synthetic English corpus of any size, with the shared corpus's statistics, and its mentions.

    .venv/bin/python -m bench.synthetic --chunks 20000 --out /tmp/synth

Writes ``docs.jsonl`` (id, title, text) and ``mentions.parquet`` (doc_id, start, end,
text, label, entity_key: character offsets in the document) and prints one JSON line.

* **Words** are drawn from the unigram distribution of the en-wiki-vital leads (a
  Zipfian distribution, as every natural corpus has), with the leads' own sentence
  lengths; a document's length is one to four real lead lengths.
* **Entities**: the corpus's titles (labelled by the article's topic: People ->
  person, Geography -> location, ...) are the popular head; a long tail is made from
  their parts (a first name and a surname of two people, "Lake" + a place name,
  "University of" + a place, "Battle of" + a place, ...). Popularity is Zipfian.
* **Co-occurrence**: each document is about one entity (its title is that entity's
  name); every passage of about a lead's length names that entity (mostly), three of
  its twelve fixed neighbours, one popular entity, a year and a number. So pairs recur
  across documents, bridges with a moderate document frequency exist, and the
  statistics step has real work: about eight mentions per chunk.

The mentions are exactly where the names were put, so they can be fed to the store in
place of NER (whose throughput is measured apart, on a sample; see bench/scale.py).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "en-wiki-vital" / "docs.jsonl"
CHUNK_TOKENS = 200  # the chunker's default target; used only to estimate the chunk count

LABEL_OF_TOPIC = {"People": "person", "Geography": "location", "Arts": "work", "History": "event",
                  "Society and social sciences": "organization"}
_PLAIN_WORD = re.compile(r"^[A-Za-z][A-Za-z'-]*$|^\d{1,4}$")
_NAME = re.compile(r"^[A-Z][\w' -]*$")
MENTION_SCHEMA = pa.schema([("doc_id", pa.string()), ("start", pa.int32()), ("end", pa.int32()),
                            ("text", pa.string()), ("label", pa.string()), ("entity_key", pa.string())])
NEIGHBOURS = 12
PARTS_CDF = np.cumsum([0.6, 0.25, 0.1])  # a document is 1 to 4 real lead lengths long


class Statistics:
    """What the generator draws from, read once from the real corpus."""

    def __init__(self, path: Path = CORPUS) -> None:
        docs = [json.loads(line) for line in path.open(encoding="utf-8")]
        counts: Counter[str] = Counter()
        self.doc_lengths, self.sentence_lengths = [], []
        for doc in docs:
            words = doc["text"].split()
            self.doc_lengths.append(len(words))
            for sentence in re.split(r"(?<=[.!?])\s+", doc["text"]):
                self.sentence_lengths.append(max(3, len(sentence.split())))
            counts.update(w.strip(".,;:()\"!?") for w in words)
        self.words = [w for w, _ in counts.most_common() if _PLAIN_WORD.match(w)]
        freq = np.array([counts[w] for w in self.words], dtype=np.float64)
        self.word_p = freq / freq.sum()
        self.titles = [(d["title"], LABEL_OF_TOPIC.get(d.get("topic", ""), "other")) for d in docs
                       if _NAME.match(d["title"]) and len(d["title"]) >= 3]


def make_entities(stats: Statistics, n: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """``n`` (name, label) pairs: the real titles first (the popular head), then made-up ones."""
    names = [t for t, _ in stats.titles]
    labels = [lab for _, lab in stats.titles]
    seen = set(names)
    people = [t.split() for t, lab in stats.titles if lab == "person" and len(t.split()) >= 2]
    firsts, lasts = [p[0] for p in people], [p[-1] for p in people]
    places = [t for t, lab in stats.titles if lab == "location" and " " not in t]

    def pick(items: list[str]) -> str:
        return items[int(rng.integers(len(items)))]

    patterns = [
        ("person", lambda: f"{pick(firsts)} {pick(lasts)}"),
        ("person", lambda: f"{pick(firsts)} {pick(firsts)} {pick(lasts)}"),
        ("location", lambda: f"Lake {pick(places)}"),
        ("location", lambda: f"{pick(places)} River"),
        ("location", lambda: f"Port {pick(lasts)}"),
        ("organization", lambda: f"University of {pick(places)}"),
        ("organization", lambda: f"{pick(lasts)} Company"),
        ("organization", lambda: f"{pick(places)} Institute"),
        ("event", lambda: f"Battle of {pick(places)}"),
        ("event", lambda: f"Treaty of {pick(places)}"),
        ("work", lambda: f"The {pick(lasts)} Variations"),
    ]
    tries = 0
    while len(names) < n and tries < 50 * n:
        tries += 1
        label, make = patterns[int(rng.integers(len(patterns)))]
        name = make()
        if name not in seen:
            seen.add(name)
            names.append(name)
            labels.append(label)
    return names[:n], labels[:n]


def zipf_p(n: int, exponent: float = 1.0) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    return p / p.sum()


class Generator:
    def __init__(self, stats: Statistics, n_entities: int, seed: int = 13) -> None:
        from factory.nlp.keys import entity_key

        self.stats = stats
        self.rng = np.random.default_rng(seed)
        self.names, self.labels = make_entities(stats, n_entities, self.rng)
        self.keys = [entity_key(name, "en", label) for name, label in zip(self.names, self.labels)]
        # cumulative distributions, drawn from by binary search (rng.choice with p
        # recomputes the cumulative sum on every call)
        self.entity_cdf = np.cumsum(zipf_p(len(self.names)))
        self.word_cdf = np.cumsum(stats.word_p)
        # fixed neighbours per entity, drawn by popularity: pairs recur, hubs are common
        self.neighbours = self._draw(self.entity_cdf, len(self.names) * NEIGHBOURS).reshape(len(self.names), NEIGHBOURS)
        self.doc_lengths = np.array(stats.doc_lengths)
        self.sentence_lengths = np.array(stats.sentence_lengths)

    def _draw(self, cdf: np.ndarray, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, self.rng.random(n) * cdf[-1]), len(cdf) - 1)

    def _draw_words(self, n: int) -> list[str]:
        idx = self._draw(self.word_cdf, n)
        words = self.stats.words
        return [words[i] for i in idx]

    def document(self, doc_id: str) -> tuple[dict, list[dict], int]:
        """One document, its mentions and its estimated chunk count."""
        rng = self.rng
        parts = 1 + int(np.searchsorted(PARTS_CDF, rng.random()))
        about = int(rng.integers(len(self.names)))
        tokens: list[tuple[str, int]] = []  # (text, entity number or -1 word, -2 year, -3 number)
        for _ in range(parts):
            length = int(self.doc_lengths[rng.integers(len(self.doc_lengths))])
            piece: list[tuple[str, int]] = [(w, -1) for w in self._draw_words(length)]
            planted: list[tuple[str, int]] = []
            if rng.random() < 0.8:
                planted.append((self.names[about], about))
            for e in rng.choice(self.neighbours[about], size=3, replace=False):
                planted.append((self.names[int(e)], int(e)))
            popular = int(self._draw(self.entity_cdf, 1)[0])
            planted.append((self.names[popular], popular))
            planted.append((str(int(rng.integers(1000, 2024))), -2))
            planted.append((str(int(rng.integers(2, 5000))), -3))
            for item in planted:
                piece.insert(int(rng.integers(0, len(piece) + 1)), item)
            tokens.extend(piece)
        # sentences: capitalised first word, a full stop after the last plain word
        out: list[str] = []
        mentions: list[dict] = []
        offset = 0
        i = 0
        n = len(tokens)
        while i < n:
            size = int(self.sentence_lengths[rng.integers(len(self.sentence_lengths))])
            sentence = tokens[i:i + size]
            i += size
            for j, (text, kind) in enumerate(sentence):
                if j == 0 and kind == -1:
                    text = text[:1].upper() + text[1:]
                start = offset
                if kind >= 0:
                    mentions.append({"doc_id": doc_id, "start": start, "end": start + len(text), "text": text,
                                     "label": self.labels[kind], "entity_key": self.keys[kind]})
                elif kind == -2:
                    mentions.append({"doc_id": doc_id, "start": start, "end": start + len(text), "text": text,
                                     "label": "date", "entity_key": text})
                elif kind == -3:
                    mentions.append({"doc_id": doc_id, "start": start, "end": start + len(text), "text": text,
                                     "label": "number", "entity_key": text})
                if j == len(sentence) - 1 and kind == -1:
                    text += "."
                out.append(text)
                offset += len(text) + 1
        doc = {"id": doc_id, "title": self.names[about], "text": " ".join(out)}
        return doc, mentions, max(1, -(-n // CHUNK_TOKENS))


def generate(out: Path, chunks: int, *, entities: int | None = None, seed: int = 13) -> dict:
    """Documents until about ``chunks`` chunks (estimated at the default chunk size)."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    stats = Statistics()
    gen = Generator(stats, entities or max(20_000, int(chunks * 0.4)), seed)
    setup_s = time.perf_counter() - started
    n_docs = n_chunks = n_mentions = n_words = 0
    batch: list[dict] = []
    with open(out / "docs.jsonl", "w", encoding="utf-8") as docs, \
            pq.ParquetWriter(out / "mentions.parquet", MENTION_SCHEMA, compression="zstd") as writer:
        while n_chunks < chunks:
            doc, mentions, estimate = gen.document(f"s{n_docs:08d}")
            docs.write(json.dumps(doc, ensure_ascii=False) + "\n")
            batch.extend(mentions)
            n_docs += 1
            n_chunks += estimate
            n_mentions += len(mentions)
            n_words += doc["text"].count(" ") + 1
            if len(batch) >= 200_000:
                writer.write_table(pa.Table.from_pylist(batch, schema=MENTION_SCHEMA))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=MENTION_SCHEMA))
    return {"docs": n_docs, "chunks_estimated": n_chunks, "words": n_words, "mentions": n_mentions,
            "entities": len(gen.names), "vocabulary": len(stats.words), "setup_s": round(setup_s, 1),
            "seconds": round(time.perf_counter() - started, 1), "out": str(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--entities", type=int, default=None, help="default: 0.4 per chunk, at least 20,000")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(json.dumps({"figure": "synthetic_corpus", **generate(args.out, args.chunks, entities=args.entities,
                                                                 seed=args.seed)}), flush=True)


if __name__ == "__main__":
    main()
