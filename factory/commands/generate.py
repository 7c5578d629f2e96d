"""`factory generate` (the loop without Prefect), `factory funnel`, `factory rejected` and `factory refused`.

Funnel and rejected only read the store's views, so they work from a second terminal
while a run (or a build) is writing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from factory.errors import FactoryError
from factory.store.funnel import funnel_summary, validator_funnel

out = Console(soft_wrap=True)


def generate_command(
    store: Path = typer.Option(..., "--store", help="store folder (ingested, with entity statistics)"),
    index: Path = typer.Option(..., "--index", help="fixed index folder built from this store"),
    llm: Optional[str] = typer.Option(None, "--llm", help="backend spec: llamacpp:NAME, openai:URL#MODEL, fake"),
    n: int = typer.Option(..., "--n", min=1, help="accepted tasks wanted"),
    lang: Optional[str] = typer.Option(None, "--lang", help="en or ru (default: the index's language)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="default: settings"),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", min=1,
                                               help="candidates at most (default: n x generate.attempts_per_task)"),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", min=1, help="stop starting candidates after"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="candidates in flight"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="default gen-LANG-sSEED: the same command resumes"),
    agent: Optional[bool] = typer.Option(None, "--agent/--no-agent", help="run the search agent (validation.agent_run)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON line"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Compose, validate, revise and accept or reject until N tasks are accepted.

    The same loop as build-benchmark's generation step: the same seed, store and index
    give the same tasks; rerunning the same command continues the run.
    """
    from factory.generate import run_generation
    from factory.index.fixed import open_index
    from factory.llm.registry import make_gateway, require_language
    from factory.settings import load_settings
    from factory.store import Store

    settings = load_settings(config, **{"llm.spec": llm, "lang": lang, "seed": seed,
                                        "generate.concurrency": concurrency, "validation.agent_run": agent})
    the_store = Store(store, create=False)
    fixed = open_index(index, store=the_store, settings=settings)
    lang = lang or fixed.manifest.lang
    if lang not in ("en", "ru"):
        raise FactoryError(f"--lang must be en or ru, got {lang!r}")
    if fixed.manifest.lang != lang:
        raise FactoryError(f"{index}: the index is for {fixed.manifest.lang!r}, not {lang!r}")
    require_language(settings.llm.spec, lang)
    run_id = run_id or f"gen-{lang}-s{settings.seed}"
    gateway = make_gateway(settings.llm.spec, settings, store=the_store, run_id=run_id,
                           record_every_s=settings.llm.record_every_s)
    try:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=out,
                      transient=False) as bar:
            task = bar.add_task("accepted", total=n, status="")

            def progress(outcome: Any, report: Any) -> None:
                rejected = ", ".join(f"{k} {v}" for k, v in sorted(report.rejected_by.items())) or "none"
                bar.update(task, completed=min(n, report.accepted_total),
                           status=f"rejected: {rejected} | revisions {report.revisions} | tokens {report.tokens}")

            report = run_generation(the_store, fixed, gateway, settings, n=n, lang=lang, run_id=run_id,
                                    seed=settings.seed, max_attempts=max_attempts, token_budget=token_budget,
                                    progress=progress)
    finally:
        gateway.close()
    if as_json:
        out.print(json.dumps(report.as_dict(), ensure_ascii=False), highlight=False)
        return
    total = report.accepted_total
    out.print(funnel_table(validator_funnel(the_store, run_id, settings.validation.order), f"validator funnel ({run_id})"))
    out.print(f"run {run_id}: {total} accepted of {n} wanted ({report.accepted} now, {report.earlier_accepted} "
              f"earlier); {report.candidates} candidates this time, acceptance {report.acceptance_rate:.1%}; "
              f"stopped by {report.stopped_by}; {report.tokens} tokens", highlight=False)
    if report.rejected_by:
        out.print("rejected by: " + ", ".join(f"{k} {v}" for k, v in sorted(report.rejected_by.items())),
                  highlight=False)
    if total == 0:
        out.print("no task was accepted: the validators are not relaxed for a weak model "
                  "(see `factory rejected`)", highlight=False)


def funnel_table(rows: list[dict[str, Any]], title: str = "validator funnel") -> Table:
    """The validator funnel as a table (rows from ``factory.store.funnel.validator_funnel``)."""
    table = Table(title=title)
    for column in ("validator", "seen", "rejected", "reject rate", "skipped", "mean time"):
        table.add_column(column, justify="left" if column == "validator" else "right")
    for row in rows:
        seen = row["seen"] or 0
        rate = f"{row['rejected'] / seen:.0%}" if seen else "-"
        mean = f"{row['mean_s']:.3f} s" if row["mean_s"] is not None else "-"
        table.add_row(row["validator"], str(seen), str(row["rejected"]), rate, str(row["skipped"]), mean)
    return table


def funnel_command(
    store: Path = typer.Option(..., "--store", help="store folder"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="one run only (default: all)"),
    as_json: bool = typer.Option(False, "--json", help="print the funnel as JSON"),
) -> None:
    """What each validator saw, rejected and skipped, and its mean time (also during a run)."""
    from factory.store import Store

    data = funnel_summary(Store(store, create=False), run_id)
    if as_json:
        out.print(json.dumps(data, ensure_ascii=False, default=str), highlight=False)
        return
    out.print(funnel_table(data["validators"], "validator funnel" + (f" ({run_id})" if run_id else "")))
    for row in data["rejected_outside_gauntlet"]:
        out.print(f"rejected at {row['stage']}: {row['n']}", highlight=False)
    revisions = data["revisions_per_accepted"]
    out.print(f"candidates finished {data['candidates']} (running {data['running']}): accepted {data['accepted']}, "
              f"rejected {data['rejected']}, acceptance {data['acceptance_rate']:.1%}, revisions per accepted task "
              f"{revisions if revisions is not None else '-'}", highlight=False)


REJECTED_SQL = """
SELECT * FROM rejected_tasks
WHERE (? IS NULL OR validator = ? OR stage = ?) AND (? IS NULL OR run_id = ?)
ORDER BY _written_at DESC, candidate_id LIMIT ?
"""


TRAIL_SQL = """
SELECT attempt, origin, question, passed, failed_validator, failed_reason, failed_feedback
FROM attempts WHERE candidate_id = ? ORDER BY attempt
"""


def rejected_command(
    store: Path = typer.Option(..., "--store", help="store folder"),
    validator: Optional[str] = typer.Option(None, "--validator", help="only this validator (or stage: select, dedup...)"),
    limit: int = typer.Option(20, "--limit", min=1),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="one run only (default: all)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per line"),
    trail: bool = typer.Option(False, "--trail", help="every draft of the candidate: feedback and what the reviser did"),
) -> None:
    """Rejected drafts, newest first, with the reason and the feedback (also during a run)."""
    from factory.store import Store

    the_store = Store(store, create=False)
    rows = the_store.query(REJECTED_SQL, [validator, validator, validator, run_id, run_id, limit])
    if as_json:
        for row in rows:
            out.print(json.dumps(row, ensure_ascii=False, default=str), highlight=False)
        return
    if not rows:
        out.print("no rejected candidates" + (f" for {validator}" if validator else ""), highlight=False)
    for row in rows:
        who = row["validator"] or row["stage"]
        out.rule(escape(f"{row['candidate_id']}  {row['cell'] or '-'}  {who}: {row['reason']}"))  # ids are user text
        if row["question"]:
            out.print(f"question: {row['question']}", highlight=False, markup=False)
            out.print(f"answer:   {row['answer']}   support: {', '.join(row['support_chunk_ids'] or [])}",
                      highlight=False, markup=False)
        elif row["parse_error"]:
            out.print(f"parse error: {row['parse_error']}  raw: {(row['raw'] or '')[:300]!r}", highlight=False,
                      markup=False)
        out.print(f"feedback: {row['feedback'] or '-'}", highlight=False, markup=False)
        out.print(f"attempts {row['attempts']}, revisions {row['revisions']}, prunes {row['prunes']}",
                  highlight=False)
        if trail:
            for step in the_store.query(TRAIL_SQL, [row["candidate_id"]]):
                verdict = (f"{step['failed_validator']}: {step['failed_reason']}" if step["failed_validator"]
                           else "passed" if step["passed"] else "-")
                out.print(f"  [{step['attempt']}] {step['origin']}: {step['question'] or '(no question)'}  ->  "
                          f"{verdict}", highlight=False, markup=False)
                if step["failed_feedback"]:
                    out.print(f"      feedback: {step['failed_feedback']}", highlight=False, markup=False)


def refused_command(
    store: Path = typer.Option(..., "--store", help="store folder"),
    lang: str = typer.Option(..., "--lang", help="en or ru"),
    forget: Optional[list[str]] = typer.Option(None, "--forget", help="an answer's entity key to draw again (repeatable)"),
    forget_run: Optional[str] = typer.Option(None, "--forget-run", help="a run id: draw again every answer only "
                                             "that run refused (a weak composer's declines)"),
    note: str = typer.Option("", "--note", help="with --forget or --forget-run: why, kept with the rows"),
    every: bool = typer.Option(False, "--all", help="forgotten answers too"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per line"),
) -> None:
    """Answers later runs do not draw: a composer declined them or a model knew them without evidence."""
    from factory.store import Store
    from factory.store.refused import FORGOTTEN, refused_answers, run_only_keys
    from factory.store.refused import forget as forget_answers

    the_store = Store(store, create=False)
    if forget_run and forget:
        raise typer.BadParameter("give --forget or --forget-run, not both", param_hint="--forget-run")
    if forget_run:
        keys = run_only_keys(the_store, lang, forget_run)
        n = forget_answers(the_store, lang, keys, note or f"forgotten with run {forget_run}")
        out.print(f"{n} answers refused only by run {forget_run} will be drawn again", highlight=False)
        return
    if forget:
        n = forget_answers(the_store, lang, list(forget), note)
        out.print(f"{n} of {len(forget)} answers will be drawn again", highlight=False)
        return
    rows = [r for r in refused_answers(the_store, lang) if every or r["latest"] != FORGOTTEN]
    if as_json:
        for row in rows:
            out.print(json.dumps(row, ensure_ascii=False, default=str), highlight=False)
        return
    table = Table("entity key", "name", "refusals", "latest", "cell", "note")
    for r in rows:
        table.add_row(*(escape(str(x or "")) for x in (r["entity_key"], r["name"], r["refusals"], r["latest"],
                                                          r["cell"], (r["note"] or "")[:80])))
    out.print(table)
    out.print(f"{len(rows)} answers", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("generate")(generate_command)
    app.command("funnel")(funnel_command)
    app.command("rejected")(rejected_command)
    app.command("refused")(refused_command)
