"""Russian NER as spaCy components: natasha's news NER plus rules for dates and numbers.

The pipeline is ``spacy.blank("ru")`` with its tokenizer replaced by razdel's (the
tokenizer natasha itself uses), so every natasha span starts and ends on a spaCy
token boundary and is kept with exactly natasha's character offsets. Components:

* ``natasha_ner``: batches documents through ``NewsNERTagger.map`` (PER/LOC/ORG);
* ``ru_dates_numbers``: adds DATE/NUMBER spans from ``quantities.find_ru_dates_numbers``
  where they do not overlap a natasha span.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from razdel import tokenize as razdel_tokenize
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch
from spacy.vocab import Vocab

from factory.nlp.quantities import find_ru_dates_numbers

RULE_SPANS = "ru_rule_spans"


class RazdelTokenizer:
    """spaCy tokenizer with razdel's token boundaries; ``doc.text`` equals the input.

    Tokens are also cut where a date/number rule span starts or ends ("10," in a list
    of numbers is one razdel token), so those spans align too; the spans are kept in
    ``doc.user_data`` for the ``ru_dates_numbers`` component. Cutting only adds
    boundaries, so natasha's spans still align exactly.
    """

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab

    def __call__(self, text: str) -> Doc:
        rule_spans = find_ru_dates_numbers(text)
        cuts = sorted({i for start, end, _ in rule_spans for i in (start, end)})
        words: list[str] = []
        spaces: list[bool] = []
        position = 0
        for token in razdel_tokenize(text):
            self._gap(text[position:token.start], words, spaces)
            piece_start = token.start
            for cut in cuts[bisect_right(cuts, token.start):bisect_left(cuts, token.stop)]:
                words.append(text[piece_start:cut])
                spaces.append(False)
                piece_start = cut
            words.append(text[piece_start:token.stop])
            spaces.append(False)
            position = token.stop
        self._gap(text[position:], words, spaces)
        doc = Doc(self.vocab, words=words, spaces=spaces)
        doc.user_data[RULE_SPANS] = rule_spans
        return doc

    @staticmethod
    def _gap(gap: str, words: list[str], spaces: list[bool]) -> None:
        # one plain space after a token is its trailing whitespace; anything else
        # (newlines, runs of spaces) becomes a whitespace token, as spaCy does
        if not gap:
            return
        if words and gap[0] == " " and not spaces[-1]:
            spaces[-1] = True
            gap = gap[1:]
        if gap:
            words.append(gap)
            spaces.append(False)

    # spaCy calls these when the pipeline is serialised; there is nothing to store
    def to_bytes(self, **_: object) -> bytes:
        return b""

    def from_bytes(self, _data: bytes, **__: object) -> "RazdelTokenizer":
        return self

    def to_disk(self, _path: object, **__: object) -> None:
        return None

    def from_disk(self, _path: object, **__: object) -> "RazdelTokenizer":
        return self


def _set_spans(doc: Doc, spans: Iterable[tuple[int, int, str]], *, keep_existing: bool) -> None:
    """Set ``doc.ents`` from character spans; new spans never overlap kept ones.

    Spans must sit on token boundaries (the tokenizer guarantees it); one that does
    not (a different tokenizer) is widened to whole tokens rather than lost.
    """
    ents = list(doc.ents) if keep_existing else []
    taken = {i for ent in ents for i in range(ent.start, ent.end)}
    for start, stop, label in spans:
        span = doc.char_span(start, stop, label=label) or doc.char_span(
            start, stop, label=label, alignment_mode="expand"
        )
        if span is None or any(i in taken for i in range(span.start, span.end)):
            continue
        ents.append(span)
        taken.update(range(span.start, span.end))
    doc.ents = sorted(ents, key=lambda s: s.start)


class NatashaNER:
    """natasha's NewsNERTagger as a spaCy component (PER, LOC, ORG)."""

    def __init__(self, batch_size: int = 16) -> None:
        from natasha import NewsEmbedding, NewsNERTagger

        self.batch_size = batch_size
        self.tagger = NewsNERTagger(NewsEmbedding())

    def spans(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        out: list[list[tuple[int, int, str]]] = []
        # natasha skips blank texts itself (Doc.tag_ner); the tagger would choke on them
        todo = [i for i, text in enumerate(texts) if text.strip()]
        results: dict[int, list[tuple[int, int, str]]] = {}
        for i, markup in zip(todo, self.tagger.map([texts[i] for i in todo])):
            results[i] = [(s.start, s.stop, s.type) for s in markup.spans]
        for i in range(len(texts)):
            out.append(results.get(i, []))
        return out

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        for batch in minibatch(docs, size=batch_size or self.batch_size):
            for doc, spans in zip(batch, self.spans([d.text for d in batch])):
                _set_spans(doc, spans, keep_existing=False)
                yield doc


class RussianDatesNumbers:
    """Rule-based DATE and NUMBER spans for Russian (see ``quantities``)."""

    def __call__(self, doc: Doc) -> Doc:
        spans = doc.user_data.get(RULE_SPANS)
        if spans is None:
            spans = find_ru_dates_numbers(doc.text)
        _set_spans(doc, spans, keep_existing=True)
        return doc


@Language.factory("natasha_ner", default_config={"batch_size": 16})
def make_natasha_ner(nlp: Language, name: str, batch_size: int) -> NatashaNER:
    return NatashaNER(batch_size=batch_size)


@Language.factory("ru_dates_numbers")
def make_ru_dates_numbers(nlp: Language, name: str) -> RussianDatesNumbers:
    return RussianDatesNumbers()
