"""Sentence-aware chunking.

A document is cut into lines, each line into sentences (spaCy's rule-based
sentencizer on a blank English pipeline; razdel for Russian), and consecutive
sentences are packed greedily into chunks of at most ``chunk_tokens`` whitespace
tokens. A sentence is only split (at whitespace) when it alone is longer than the
target. Chunk ids are ``{doc_id}_{n}``: the same text and settings give the same
ids on every ingest. Chunk text is an exact slice of the document
(``text[char_start:char_end]``).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Iterable, Iterator, Sequence

from factory.records import Chunk, Document, Lang

# bump when the cutting rules change: stored documents then count as changed and are re-chunked
CHUNKER_VERSION = "1"
# lines longer than this are cut at whitespace before sentence splitting (bounds spaCy's memory)
MAX_SEGMENT_CHARS = 100_000

_LINE = re.compile(r"[^\n]+")
_WORD = re.compile(r"\S+")

Span = tuple[int, int]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def count_tokens(text: str) -> int:
    return len(text.split())


@lru_cache(maxsize=1)
def _english_nlp():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = MAX_SEGMENT_CHARS + 1
    return nlp


def _segments(text: str) -> list[Span]:
    """Non-blank lines, long ones cut at whitespace into pieces of at most MAX_SEGMENT_CHARS."""
    out: list[Span] = []
    for match in _LINE.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        while end - start > MAX_SEGMENT_CHARS:
            cut = text.rfind(" ", start, start + MAX_SEGMENT_CHARS)
            if cut <= start:
                cut = start + MAX_SEGMENT_CHARS
            out.append((start, cut))
            start = cut
            while start < end and text[start].isspace():
                start += 1
        if end > start:
            out.append((start, end))
    return out


def sentence_spans(texts: Sequence[str], lang: Lang, batch_size: int = 256) -> list[list[Span]]:
    """Character spans of the sentences of each text (batched over all lines of all texts)."""
    segments = [_segments(text) for text in texts]
    result: list[list[Span]] = [[] for _ in texts]
    if lang == "en":
        pieces = [(i, s, e) for i, segs in enumerate(segments) for s, e in segs]
        docs = _english_nlp().pipe((texts[i][s:e] for i, s, e in pieces), batch_size=batch_size)
        for (i, seg_start, _), doc in zip(pieces, docs):
            for sent in doc.sents:
                if sent.end_char > sent.start_char:
                    result[i].append((seg_start + sent.start_char, seg_start + sent.end_char))
    elif lang == "ru":
        from razdel import sentenize

        for i, segs in enumerate(segments):
            for seg_start, seg_end in segs:
                for sent in sentenize(texts[i][seg_start:seg_end]):
                    if sent.stop > sent.start:
                        result[i].append((seg_start + sent.start, seg_start + sent.stop))
    else:
        raise ValueError(f"no sentence splitter for language {lang!r}")
    return result


def _word_pieces(text: str, span: Span, limit: int) -> list[tuple[Span, int]]:
    """Cut one over-long sentence at whitespace into pieces of ``limit`` tokens."""
    words = [m.span() for m in _WORD.finditer(text, span[0], span[1])]
    return [
        ((words[i][0], words[min(i + limit, len(words)) - 1][1]), min(limit, len(words) - i))
        for i in range(0, len(words), limit)
    ]


def pack(text: str, sentences: Iterable[Span], chunk_tokens: int) -> list[tuple[Span, int]]:
    """Greedily pack sentence spans into chunk spans of at most ``chunk_tokens`` tokens."""
    chunks: list[tuple[Span, int]] = []
    start = end = -1
    tokens = 0
    for s, e in sentences:
        n = count_tokens(text[s:e])
        if n == 0:
            continue
        if tokens and tokens + n > chunk_tokens:
            chunks.append(((start, end), tokens))
            tokens = 0
        if n > chunk_tokens:
            chunks.extend(_word_pieces(text, (s, e), chunk_tokens))
            continue
        if tokens == 0:
            start = s
        end = e
        tokens += n
    if tokens:
        chunks.append(((start, end), tokens))
    return chunks


class Chunker:
    """Cuts documents of one language into chunks of about ``chunk_tokens`` tokens."""

    def __init__(self, lang: Lang, chunk_tokens: int = 200) -> None:
        self.lang = lang
        self.chunk_tokens = chunk_tokens

    @property
    def signature(self) -> str:
        """Everything besides the text that decides the cut (part of the document hash)."""
        return f"chunker={CHUNKER_VERSION};lang={self.lang};tokens={self.chunk_tokens}"

    def chunk_many(self, docs: Sequence[Document]) -> list[list[Chunk]]:
        spans = sentence_spans([d.text for d in docs], self.lang)
        return [self._chunks(doc, sents) for doc, sents in zip(docs, spans)]

    def chunk(self, doc: Document) -> list[Chunk]:
        return self.chunk_many([doc])[0]

    def iter_chunks(self, docs: Iterable[Document], batch: int = 256) -> Iterator[tuple[Document, list[Chunk]]]:
        buffer: list[Document] = []
        for doc in docs:
            buffer.append(doc)
            if len(buffer) >= batch:
                yield from zip(buffer, self.chunk_many(buffer))
                buffer = []
        if buffer:
            yield from zip(buffer, self.chunk_many(buffer))

    def _chunks(self, doc: Document, sentences: list[Span]) -> list[Chunk]:
        out = []
        for n, ((start, end), _) in enumerate(pack(doc.text, sentences, self.chunk_tokens)):
            text = doc.text[start:end]
            tokens = count_tokens(text)  # recount: sentences may touch without whitespace
            out.append(
                Chunk(
                    chunk_id=f"{doc.id}_{n}",
                    doc_id=doc.id,
                    n=n,
                    lang=doc.lang,
                    title=doc.title,
                    text=text,
                    content_hash=content_hash(text),
                    n_tokens=tokens,
                    char_start=start,
                    char_end=end,
                )
            )
        return out
