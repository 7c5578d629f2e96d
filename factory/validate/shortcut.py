"""Broad-query shortcut: the whole question as one query must not already find the evidence.

Each configured searcher (BM25, dense, hybrid) gets the question verbatim. The draft
fails when, for any of them, the answer chunk is in the top k, or at least the
configured share of the support set is. The feedback names the chunks surfaced and
the question words they share with them: the words to replace by an indirect
description.
"""

from __future__ import annotations

import math

from factory.records import Draft, Verdict
from factory.validate.base import ValidationContext, skipped, verdict
from factory.validate.feedback import say
from factory.validate.tokens import tokenize


class ShortcutValidator:
    name = "shortcut"

    def check(self, draft: Draft, ctx: ValidationContext) -> Verdict:
        s = ctx.settings
        searchers = {name: ctx.searchers[name] for name in s.shortcut_searchers if name in ctx.searchers}
        missing = [name for name in s.shortcut_searchers if name not in ctx.searchers]
        if not searchers:
            return skipped(self.name, "no_searcher", f"no searcher among {s.shortcut_searchers} is available")
        support = list(dict.fromkeys(draft.support_chunk_ids))
        need = max(1, math.ceil(s.shortcut_support_share * len(support) - 1e-9))  # "at least half" of 3 is 2
        per_searcher: dict[str, dict] = {}
        failures: list[tuple[str, list[str], bool]] = []
        for name, searcher in searchers.items():
            hits = searcher.search(draft.question, s.shortcut_k)
            top = [h.chunk_id for h in hits[: s.shortcut_k]]
            found = [c for c in support if c in top]
            answer_hit = draft.answer_chunk_id in top if draft.answer_chunk_id else False
            per_searcher[name] = {
                "support_in_top": len(found),
                "answer_rank": top.index(draft.answer_chunk_id) + 1 if answer_hit else None,
                "ranks": {c: top.index(c) + 1 for c in found},
            }
            if answer_hit or len(found) >= need:
                failures.append((name, found, answer_hit))
        figures = {"k": s.shortcut_k, "support": len(support), "need": need, "searchers": per_searcher}
        if missing:
            figures["missing_searchers"] = missing
        if not failures:
            return verdict(self.name, True, **figures)
        surfaced = list(dict.fromkeys(c for _, found, _ in failures for c in found))
        terms = self._shared_terms(draft, surfaced, ctx)
        titles = ctx.chunks.titles(surfaced)
        chunk_list = ", ".join(f"{c} ({titles[c]})" if titles.get(c) else c for c in surfaced)
        lang = draft.lang
        which = "; ".join(
            say(lang, "shortcut_item", searcher=name, found=len(found), support=len(support), k=s.shortcut_k,
                answer=say(lang, "shortcut_answer") if answer_hit else "")
            for name, found, answer_hit in failures
        )
        words = ", ".join(f'"{w}"' for w in terms) or say(lang, "shortcut_no_terms")
        feedback = say(lang, "shortcut", which=which, chunks=chunk_list, words=words)
        figures["surfaced"] = surfaced
        figures["terms"] = terms
        reason = "answer_chunk_in_top_k" if any(hit for _, _, hit in failures) else "support_in_top_k"
        return verdict(self.name, False, reason, feedback, **figures)

    @staticmethod
    def _shared_terms(draft: Draft, chunk_ids: list[str], ctx: ValidationContext, limit: int = 8) -> list[str]:
        """Question words (as written) that a surfaced chunk shares, compared as the index's
        own analyser sees them (so 'which' counts when the index keeps it)."""
        texts = ctx.chunks.texts(chunk_ids)
        analyzer = next((getattr(s, "analyzer", None) for s in ctx.searchers.values()
                         if callable(getattr(s, "analyzer", None))), None)
        if analyzer is not None:
            def terms(text: str) -> set[str]:
                return set(analyzer(text))
        else:
            def terms(text: str) -> set[str]:
                return {k for t in tokenize(text, draft.lang) for k in (t.stem, t.lemma)}
        keys: set[str] = set()
        for text in texts.values():
            keys |= terms(text)
        out: list[str] = []
        for token in tokenize(draft.question, draft.lang):
            if terms(token.surface) & keys and token.surface not in out:
                out.append(token.surface)
        return out[:limit]
