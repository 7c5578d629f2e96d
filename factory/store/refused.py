"""The store's memory of refused answers (migration 015): which answers later runs avoid.

The loop appends a row for each answer it turns away (``generate.judge``); ``forget`` appends
a ``forgotten`` row, and an answer whose latest row is one is drawn again. Rows are never
deleted: the store only appends, so the history of each answer stays readable.
"""

from __future__ import annotations

import time
from typing import Any

FORGOTTEN = "forgotten"

# per answer: how often it was refused, the latest reason and note; live = not forgotten since
_ANSWERS_SQL = """
SELECT entity_key, arg_max(name, _written_at) AS name, count(*) FILTER (WHERE reason <> ?) AS refusals,
       arg_max(reason, _written_at) AS latest, arg_max(note, _written_at) AS note,
       arg_max(cell, _written_at) FILTER (WHERE reason <> ?) AS cell, max(_written_at) AS latest_at
FROM refused_answers WHERE lang = ?
GROUP BY entity_key
ORDER BY latest_at DESC, entity_key
"""


def refusal_row(lang: str, entity_key: str, *, reason: str, name: str | None = None, cell: str | None = None,
                note: str = "", candidate_id: str | None = None, draft_id: str, run_id: str | None = None
                ) -> dict[str, Any]:
    """One row of refused_answers: the loop's refusals, the reference draws' declines and a forget."""
    return {"lang": lang, "entity_key": entity_key, "name": name, "cell": cell, "reason": reason, "note": note,
            "candidate_id": candidate_id, "draft_id": draft_id, "run_id": run_id}


def refused_answers(store: Any, lang: str) -> list[dict[str, Any]]:
    """Every answer ever refused in ``lang``, newest first, with ``latest`` its latest reason."""
    return store.query(_ANSWERS_SQL, [FORGOTTEN, FORGOTTEN, lang])


def refused_keys(store: Any, lang: str) -> list[str]:
    """The answers the selectors avoid: refused and not forgotten since."""
    return [r["entity_key"] for r in refused_answers(store, lang) if r["latest"] != FORGOTTEN]


def run_only_keys(store: Any, lang: str, run_id: str) -> list[str]:
    """The live answers that only run ``run_id`` refused (since each one's latest forget): what
    that run alone keeps later runs from. An answer another run refused too stays refused.
    Rows in the order written: a forget empties an answer's runs, so what is left is live."""
    runs: dict[str, set[str]] = {}
    for r in store.query("SELECT entity_key, run_id, reason FROM refused_answers WHERE lang = ? "
                         "ORDER BY _written_at", [lang]):
        if r["reason"] == FORGOTTEN:
            runs.pop(r["entity_key"], None)  # refusals before a forget no longer count
        else:
            runs.setdefault(r["entity_key"], set()).add(r["run_id"] or "")
    return sorted(k for k, by in runs.items() if by == {run_id})


def forget(store: Any, lang: str, keys: list[str], note: str = "") -> int:
    """Let ``keys`` be drawn again (a ``forgotten`` row each); returns how many were refused."""
    live = set(refused_keys(store, lang))
    stamp = time.time_ns()  # the row key holds draft_id: two forgets of one answer in a second are two rows
    rows = [refusal_row(lang, k, reason=FORGOTTEN, note=note, draft_id=f"forget-{stamp}-{k}") for k in keys if k in live]
    if rows:
        store.append("refused_answers", rows)
    return len(rows)
