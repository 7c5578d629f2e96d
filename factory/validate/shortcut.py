"""Broad-query shortcut: the whole question as one query must not hand over what it hides.

Each configured searcher (BM25, dense, hybrid) gets the question verbatim, and then its
keywords: its ``shortcut_keywords`` rarest words (by the index's document frequency,
leaving out the names it may use), as a solver who searches for them would; rare words
pasted from a hidden passage into a long question hide from the whole-question query but
not from this one. By the contract (factory/contract.py) a question may name its seed, so
finding a seed passage is what a first search should do and no shortcut. The draft fails
when, for any searcher and either query, the top k holds:

* the answer passage, when the answer passage is hidden (``answer_passage_found``);
* more than ``shortcut_hidden_share`` of the hidden passages (``hidden_passages_found``);
* every support passage at once (``all_evidence_found``): one query answers the question.

The feedback names the passages found (the reviser sees them as P-labels) and the
question's words that lead there: words the passage shares with the question, rare ones
first, never stop words or words of a name the question may use. Those are what a
rewrite can change; the support itself stays. When no word search (BM25) finds them and
only a meaning-based one does, it says so: the question retells what the passage says,
and other words for the same description would be found again (in the reference draws,
most refusals after a revision were of this kind).
"""

from __future__ import annotations

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, skipped, verdict
from factory.validate.feedback import say
from factory.validate.leakage import draft_contract
from factory.validate.tokens import asking_keys, content, keys_of, rarest, tokenize


class ShortcutValidator:
    name = "shortcut"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        searchers = {name: ctx.searchers[name] for name in s.shortcut_searchers if name in ctx.searchers}
        missing = [name for name in s.shortcut_searchers if name not in ctx.searchers]
        if not searchers:
            return skipped(self.name, "no_searcher", f"no searcher among {s.shortcut_searchers} is available")
        contract = draft_contract(draft, ctx)
        support, hidden = list(contract.support), list(contract.hidden_passages)
        queries = {"question": draft.question}
        keywords = keyword_query(draft, contract.may_name, ctx, s.shortcut_keywords)
        if keywords:
            queries["keywords"] = keywords
        per_searcher: dict[str, dict] = {}
        failures: list[tuple[str, str, list[str]]] = []  # (searcher[/query], reason, passages that gave it away)
        for query_name, query in queries.items():
            for name, searcher in searchers.items():
                label = name if query_name == "question" else f"{name}/{query_name}"
                top = [h.chunk_id for h in searcher.search(query, s.shortcut_k)[: s.shortcut_k]]
                ranks = {c: top.index(c) + 1 for c in support if c in top}
                found_hidden = [c for c in hidden if c in top]
                per_searcher[label] = {"ranks": ranks, "support_in_top": len(ranks),
                                       "hidden_in_top": len(found_hidden),
                                       "answer_rank": ranks.get(contract.answer_passage or "")}
                if contract.answer_is_hidden() and contract.answer_passage in top:
                    failures.append((label, "answer_passage_found", [contract.answer_passage]))
                elif hidden and len(found_hidden) / len(hidden) > s.shortcut_hidden_share:
                    failures.append((label, "hidden_passages_found", found_hidden))
                elif support and len(ranks) == len(support):
                    failures.append((label, "all_evidence_found", support))
        figures = {"k": s.shortcut_k, "support": len(support), "seed_passages": list(contract.seed_passages),
                   "hidden_passages": hidden, "hidden_share": s.shortcut_hidden_share, "keywords": keywords,
                   "searchers": per_searcher}
        if missing:
            figures["missing_searchers"] = missing
        if not failures:
            return verdict(self.name, True, **figures)
        order = ("answer_passage_found", "hidden_passages_found", "all_evidence_found")
        reason = min((r for _, r, _ in failures), key=order.index)
        surfaced = list(dict.fromkeys(c for _, _, chunks in failures for c in chunks))
        terms = rare_shared_terms(draft, surfaced, contract.may_name, ctx)
        lang = draft.lang
        which = "; ".join(say(lang, f"shortcut_{r}_item", searcher=name, chunks=", ".join(
            f"{c} ({per_searcher[name]['ranks'].get(c)})" for c in chunks if c in per_searcher[name]["ranks"]),
            k=s.shortcut_k) for name, r, chunks in failures)
        words = ", ".join(f'"{w}"' for w in terms) or say(lang, "shortcut_no_terms")
        advice = say(lang, "shortcut_advice_all" if reason == "all_evidence_found" and not hidden else "shortcut_advice")
        feedback = say(lang, "shortcut", which=which, words=words, advice=advice)
        if any("/keywords" in name for name, _, _ in failures):
            feedback += " " + say(lang, "shortcut_keywords", words=keywords)
        if not any(name.split("/")[0] == "bm25" for name, _, _ in failures):
            # only a meaning-based search (dense, or hybrid through its dense half) finds them:
            # synonyms will not help, a description that does not retell the passage will
            feedback += " " + say(lang, "shortcut_meaning_only")
        figures.update(surfaced=surfaced, terms=terms)
        return verdict(self.name, False, reason, feedback, **figures)


def keyword_query(draft: Draft, allowed_names: tuple[str, ...], ctx: ValidationContext, n: int) -> str:
    """The question's ``n`` rarest words (by the BM25 index's document frequency), as a solver
    who searches for its keywords would; words of a name the question may use are left out
    (searching those is expected), and so are the words that only ask ("Назовите": rare in news,
    so it took a keyword's place in 67 of 271 Russian reference queries). Empty without a BM25 searcher or with fewer than two."""
    bm25 = ctx.searchers.get("bm25")
    if n < 2 or bm25 is None or not hasattr(bm25, "doc_freq"):
        return ""
    skip = keys_of(allowed_names, draft.lang) | asking_keys(draft.lang)
    words = rarest(draft.question, draft.lang, bm25.doc_freq, n, skip=skip)
    return " ".join(t.surface for t in words) if len(words) >= 2 else ""


def rare_shared_terms(draft: Draft, chunk_ids: list[str], allowed_names: tuple[str, ...], ctx: ValidationContext,
                      limit: int = 6) -> list[str]:
    """Question words (as written) that the passages share and a rewrite can replace, rarest
    first: no stop words, nothing of a name the question may use; words the corpus writes in
    lower case (ordinary vocabulary) come after the rest."""
    lang = draft.lang
    lexicon = ctx.get_lexicon()
    passage_keys = keys_of(ctx.chunks.texts(chunk_ids).values(), lang)
    allowed = keys_of(allowed_names, lang)
    rare: list[str] = []
    ordinary: list[str] = []
    for token in content(tokenize(draft.question, lang)):
        if token.lemma in allowed or token.stem in allowed:
            continue
        if (token.lemma in passage_keys or token.stem in passage_keys) and token.surface not in rare + ordinary:
            (ordinary if lexicon.is_common(token) else rare).append(token.surface)
    return (rare + ordinary)[:limit]
