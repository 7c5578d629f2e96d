"""Single-hop question sets for the audit acceptance: what a naive generator writes.

    python corpora/audit/make_single_hop.py --lang en --out outputs/audit/single-hop-en
    python corpora/audit/make_single_hop.py --lang ru --out outputs/audit/single-hop-ru

Deterministic and transparent: documents of a shared corpus are visited in the order
of the SHA-256 of their ids; each document is chunked with the factory's own chunker,
and the first sentence that fits one of the templates below becomes a question whose
answer is a short span of that sentence. The gold passage is the one chunk holding the
sentence, so every question is answered by ONE passage. The corpus of the folder is
every chunk of the question documents plus further documents in the same order, up
to ``--docs`` documents, so retrieval is not trivial by size.

Templates (the question copies the sentence's words, which is the point: a broad query
should find the passage):

* ``en/definition``: a first sentence "TITLE is/was a|an|the DESCRIPTION ..." becomes
  "What is/was the name of the DESCRIPTION?" (the description cut at a clause boundary),
  answer TITLE as the sentence writes it.
* ``ru/source``: "CLAIM, сообщает SOURCE." or "Как сообщает SOURCE, CLAIM." becomes
  "Какой источник сообщил, что CLAIM?", answer SOURCE (a generic word such as
  "агентство" and quotes dropped).
* ``ru/date``: "[В пятницу,] 3 июня 2016 года[,] EVENT." becomes "Когда EVENT?", answer
  the date.

The folder (BEIR layout) holds corpus.jsonl (``_id``, ``title``, ``text``, ``doc_id``),
queries.jsonl (``_id``, ``text``, ``answer``, ``answers``, ``template``, ``doc_id``) and
qrels/test.tsv. The corpus text is never committed: the folder is built from
../shared/corpora into outputs/ or a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from factory.corpus.chunking import Chunker, sentence_spans  # noqa: E402
from factory.records import Chunk, Document  # noqa: E402

CORPORA = {"en": "en-wiki-vital", "ru": "ru-wikinews"}
CHUNK_TOKENS = 200  # the factory's default chunk size
MAX_QUESTION_WORDS = 24
MIN_DESCRIPTION_WORDS = 4
MAX_ANSWER_WORDS = 6

# ------------------------------------------------------------------ English
_EN_DEFINITION = re.compile(r"^(?P<subject>.+?)\s+(?P<verb>is|was|are|were)\s+(?:an|a|the)\s+(?P<rest>.+?)\.?$")
# a description is not cut right after one of these words (it would end mid-phrase)
_EN_DANGLING = {"a", "an", "the", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with", "from", "which",
                "who", "that", "as", "its", "his", "her", "their", "is", "was", "are", "were", "has", "had"}


def _drop_parentheses(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"\s*[(\[][^()\[\]]*[)\]]", "", text)
    return " ".join(text.split())


def _cut_clause(words: list[str], min_words: int) -> list[str]:
    """Words up to the first clause boundary after ``min_words``, at most MAX_QUESTION_WORDS."""
    out: list[str] = []
    for word in words:
        out.append(word)
        if word.endswith(";"):
            break
        if len(out) >= min_words and re.search(r"[,:]$", word):
            break
        if len(out) >= MAX_QUESTION_WORDS:
            break
    while out and out[-1].strip(",;:").casefold() in _EN_DANGLING:
        out.pop()
    if out:
        out[-1] = out[-1].rstrip(",;:")
    return out


def english_question(sentence: str, title: str) -> dict[str, str] | None:
    clean = _drop_parentheses(sentence).rstrip(".")
    match = _EN_DEFINITION.match(clean)
    if not match:
        return None
    subject = match["subject"]
    fold = lambda s: s.casefold().removeprefix("the ")  # noqa: E731
    if fold(subject) != fold(title) or len(subject.split()) > MAX_ANSWER_WORDS:
        return None
    words = _cut_clause(match["rest"].split(), 6)
    if len(words) < MIN_DESCRIPTION_WORDS:
        return None
    description = " ".join(words)
    if fold(title) in description.casefold():
        return None  # the question would name its answer
    tense = "is" if match["verb"] in ("is", "are") else "was"
    return {"question": f"What {tense} the name of the {description}?", "answer": subject,
            "template": "en/definition"}


# ------------------------------------------------------------------ Russian
_RU_VERBS = r"(?:сообщает|сообщил|сообщила|сообщило|сообщили|пишет|передает|передаёт|информирует)"
_RU_SOURCE_AFTER = re.compile(
    r"^(?P<claim>[^\"«].{25,}?),\s+" + _RU_VERBS + r"\s+(?P<source>[^,.;]{2,60}?)(?:\s+со ссылкой[^.]*)?\.?$"
)
_RU_SOURCE_BEFORE = re.compile(
    r"^Как\s+" + _RU_VERBS + r"\s+(?P<source>[^,]{2,60}?)(?:\s+со ссылкой[^,]*)?,\s+(?P<claim>.{25,}?)\.?$"
)
_MONTHS = "января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря"
_RU_DATE = re.compile(
    r"^(?:(?:В|Во)\s+\w+,\s+)?(?P<date>\d{1,2}\s+(?:" + _MONTHS + r")\s+\d{4}\s+года),?\s+(?P<rest>.{20,}?)\.?$"
)
# generic words before a source's name; dropped from the answer
_RU_GENERIC = {"агентство", "агентства", "газета", "издание", "телеканал", "радиостанция", "журнал", "сайт",
               "портал", "иа", "информагентство", "корреспондент"}
_RU_BAD_SOURCE_START = {"в", "во", "сегодня", "тогда", "также", "об", "по", "со", "ранее", "вчера", "он", "она",
                        "они", "в", "ему", "ей"}
_RU_BAD_CLAIM_START = ("об этом", "это ", "такие данные", "эти данные", "такую информацию", "об этом")


def _ru_answer(source: str) -> str | None:
    words = source.split()
    if not words or words[0].casefold() in _RU_BAD_SOURCE_START or len(words) > MAX_ANSWER_WORDS:
        return None
    quoted = re.match(r"^[^A-ZА-ЯЁ«\"“„']*[«\"“„]([^«»\"“”„]+)", source)
    if quoted:  # 'казанская "Газета Daily"': the name is what the quotes hold
        return quoted.group(1).strip() or None
    while len(words) > 1 and words[0].casefold() in _RU_GENERIC:
        words = words[1:]
    named = next((i for i, w in enumerate(words) if re.match(r"[\"«'A-ZА-ЯЁ]", w)), None)
    if named is None:
        return None  # "официальные лица": not a name
    # the name ends at the first ordinary word after it ("РИА Новости представитель ...")
    end = next((i for i in range(named + 1, len(words)) if words[i][:1].islower()), len(words))
    answer = " ".join(words[:end])
    while len(answer) > 2 and answer[0] in "\"«“„'" and answer[-1] in "\"»”“'":
        answer = answer[1:-1]  # a name wrapped in quotes as a whole
    return answer or None


def _sentence_case(first_word_capitalised_elsewhere: bool, text: str) -> str:
    if first_word_capitalised_elsewhere or not text[:1].isupper() or text[1:2].isupper():
        return text  # a name ("Барак Обама ...") or an acronym keeps its capital
    return text[:1].lower() + text[1:]


def russian_question(sentence: str, document: str) -> dict[str, str] | None:
    sentence = " ".join(sentence.split())
    if "[" in sentence or "()" in sentence:
        return None  # wiki markup left in the text
    for pattern in (_RU_SOURCE_AFTER, _RU_SOURCE_BEFORE):
        match = pattern.match(sentence)
        if not match:
            continue
        claim = match["claim"].strip()
        answer = _ru_answer(match["source"])
        words = claim.split()
        if answer is None or claim.casefold().startswith(_RU_BAD_CLAIM_START) or len(words) > MAX_QUESTION_WORDS + 6:
            return None
        first = words[0].strip("«\"")
        named = bool(re.search(r"[^.!?\n]\s" + re.escape(first) + r"\b", document))  # capitalised mid-sentence
        return {"question": f"Какой источник сообщил, что {_sentence_case(named, claim)}?", "answer": answer,
                "template": "ru/source"}
    match = _RU_DATE.match(sentence)
    if match:
        words = _cut_clause(match["rest"].split(), 8)
        if len(words) < MIN_DESCRIPTION_WORDS:
            return None
        return {"question": f"Когда {' '.join(words)}?", "answer": match["date"], "template": "ru/date"}
    return None


# ------------------------------------------------------------------ building the folder
def read_docs(path: Path, lang: str) -> list[Document]:
    docs = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                docs.append(Document(id=record["id"], title=record.get("title") or "", text=record["text"], lang=lang))
    docs.sort(key=lambda d: hashlib.sha256(d.id.encode("utf-8")).hexdigest())
    return docs


def _batches(items: list[Document], size: int) -> Iterator[list[Document]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def make_questions(docs: list[Document], lang: str, n_questions: int) -> tuple[list[dict[str, Any]], dict[str, list[Chunk]]]:
    """Questions from documents in order until ``n_questions``; returns them and the chunks of the docs visited."""
    chunker = Chunker(lang, CHUNK_TOKENS)
    questions: list[dict[str, Any]] = []
    chunks_of: dict[str, list[Chunk]] = {}
    for batch in _batches(docs, 200):
        for doc, chunks, sentences in zip(batch, chunker.chunk_many(batch), sentence_spans([d.text for d in batch], lang)):
            chunks_of[doc.id] = chunks
            if len(questions) >= n_questions:
                continue
            for start, end in sentences[: 1 if lang == "en" else 6]:
                made = (english_question(doc.text[start:end], doc.title) if lang == "en"
                        else russian_question(doc.text[start:end], doc.text))
                gold = next((c for c in chunks if c.char_start <= start and end <= c.char_end), None)
                if made and gold is not None and made["answer"] in gold.text:
                    questions.append({"doc_id": doc.id, "chunk_id": gold.chunk_id, **made})
                    break
        if len(questions) >= n_questions:
            break
    return questions, chunks_of


def build_single_hop(lang: str, corpora: Path, out: Path, n_questions: int = 120, n_docs: int = 2000) -> dict[str, Any]:
    """Write the BEIR folder for ``lang`` into ``out``; returns counts."""
    docs = read_docs(Path(corpora) / CORPORA[lang] / "docs.jsonl", lang)
    questions, chunks_of = make_questions(docs, lang, n_questions)
    if len(questions) < n_questions:
        raise SystemExit(f"only {len(questions)} questions could be made from {CORPORA[lang]}")
    wanted = {q["doc_id"] for q in questions}
    chosen = [d for d in docs if d.id in wanted]
    chosen += [d for d in docs if d.id not in wanted][: max(0, n_docs - len(chosen))]
    missing = [d for d in chosen if d.id not in chunks_of]
    if missing:
        chunker = Chunker(lang, CHUNK_TOKENS)
        for doc, chunks in zip(missing, chunker.chunk_many(missing)):
            chunks_of[doc.id] = chunks
    out = Path(out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = sorted((c for d in chosen for c in chunks_of[d.id]), key=lambda c: c.chunk_id)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for chunk in corpus:
            record = {"_id": chunk.chunk_id, "title": chunk.title, "text": chunk.text, "doc_id": chunk.doc_id}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as handle:
        for i, q in enumerate(questions):
            record = {"_id": f"{lang}-sh-{i:03d}", "text": q["question"], "answer": q["answer"],
                      "answers": [q["answer"]], "template": q["template"], "doc_id": q["doc_id"]}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for i, q in enumerate(questions):
            handle.write(f"{lang}-sh-{i:03d}\t{q['chunk_id']}\t1\n")
    templates: dict[str, int] = {}
    for q in questions:
        templates[q["template"]] = templates.get(q["template"], 0) + 1
    return {"lang": lang, "questions": len(questions), "documents": len(chosen), "chunks": len(corpus),
            "templates": templates, "out": str(out)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(CORPORA), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--questions", type=int, default=120)
    parser.add_argument("--docs", type=int, default=2000, help="documents in the corpus (questions' documents first)")
    args = parser.parse_args(argv)
    print(json.dumps(build_single_hop(args.lang, args.corpora, args.out, args.questions, args.docs), ensure_ascii=False))


if __name__ == "__main__":
    main()
