"""`factory compose`: drafts for inspection (cell -> subgraph -> fact sheet -> draft, no validation)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from factory.errors import FactoryError

out = Console(soft_wrap=True)


def compose_command(
    store: Path = typer.Option(..., "--store", help="store folder with chunks and entity statistics"),
    index: Optional[Path] = typer.Option(None, "--index", help="fixed index folder: the composer is told each "
                                         "hidden passage's search words from it, as in `generate`"),
    llm: Optional[str] = typer.Option(None, "--llm", help="backend spec: llamacpp:NAME, openai:URL#MODEL, fake"),
    n: int = typer.Option(5, "--n", min=1, help="drafts to compose"),
    cell: Optional[str] = typer.Option(None, "--cell", help="MECHANIC/FORM/TYPE; default: drawn by the sampler"),
    lang: Optional[str] = typer.Option(None, "--lang", help="en or ru (default: settings)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="default: settings"),
    taxonomy: Optional[Path] = typer.Option(None, "--taxonomy", help="taxonomy folder (default: settings / repository)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per candidate instead of panels"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Compose N drafts and print them with their subgraph and fact sheet."""
    from factory.generate.drafting import draft_for_cell, selection_rng
    from factory.graph.select import SelectionIndex
    from factory.llm.registry import make_gateway, require_language
    from factory.records import Cell
    from factory.settings import load_settings
    from factory.store import Store
    from factory.taxonomy import CellSampler, load_taxonomy

    settings = load_settings(config, **{"llm.spec": llm, "lang": lang, "seed": seed,
                                        "compose.taxonomy_dir": str(taxonomy) if taxonomy else None})
    lang = settings.lang
    if lang not in ("en", "ru"):
        raise FactoryError(f"--lang must be en or ru, got {lang!r}")
    require_language(settings.llm.spec, lang)
    tax = load_taxonomy(settings.compose.taxonomy_dir)
    fixed = None
    if cell:
        try:
            fixed = Cell.parse(cell)
        except ValueError as exc:
            raise FactoryError(str(exc)) from exc
        tax.spec(fixed)  # unknown or incompatible cells fail here, with the reason
    the_store = Store(store, create=False)
    selection = SelectionIndex.load(the_store, lang)
    if not selection.chunk_ids:
        raise FactoryError(f"{store}: no entity mentions in {lang!r}; run `factory ingest` with entities first")
    vocabulary = None
    if index is not None:  # the words the broad-query check would find each hidden passage by
        from factory.index.fixed import open_index

        vocabulary = open_index(index, store=the_store, settings=settings).searcher("bm25")
    gateway = make_gateway(settings.llm.spec, settings, store=the_store, stage_default="compose",
                           run_id=f"compose-{uuid.uuid4().hex[:8]}")
    sampler = CellSampler(tax, settings.seed, lang)
    used: set[frozenset[str]] = set()
    drafts = declined = 0
    for i in range(n):
        chosen = fixed or sampler.draw(i)
        result = draft_for_cell(selection, the_store, tax, chosen, gateway, settings, lang=lang,
                                candidate_id=f"compose-{settings.seed}-{i}",
                                rng=selection_rng(settings.seed, i), avoid=used, vocabulary=vocabulary)
        if result.stopped == "facts" and result.raw:
            result.reason += f" | raw: {result.raw[:300]!r}"
        if result.subgraph is not None:
            used.add(frozenset(result.subgraph.chunk_ids))
        if result.structural and not fixed:
            sampler.mark_unsupported(chosen, result.reason)
        drafts += result.draft is not None and result.draft.parse_error is None and not result.draft.declined
        declined += result.draft is not None and bool(result.draft.declined)
        if as_json:
            out.print_json(json.dumps(_as_dict(i, result), ensure_ascii=False))
        else:
            _show(i, result)
    out.print(f"{drafts} of {n} candidates gave a parsed draft, {declined} were declined as allowing no honest "
              "question (no validation ran)", highlight=False)


def _as_dict(index: int, result) -> dict:
    return {
        "index": index,
        "cell": result.cell.key,
        "stopped": result.stopped,
        "reason": result.reason,
        "subgraph": result.subgraph.model_dump(mode="json") if result.subgraph else None,
        "facts": [f.model_dump(mode="json") for f in result.sheet.facts] if result.sheet else None,
        "draft": result.draft.model_dump(mode="json") if result.draft else None,
    }


def _show(index: int, result) -> None:
    lines = [f"[bold]cell[/] {_e(result.cell.key)}"]
    sub = result.subgraph
    if sub is not None:
        names = {k: v.get("name", k) for k, v in sub.figures.get("entities", {}).items()}
        answer = names.get(sub.answer_entity or "", "(open)")
        lines.append(f"[bold]answer entity[/] {_e(answer)}   [bold]bridges[/] "
                     f"{_e(', '.join(names.get(b, b) for b in sub.bridge_entities) or '-')}   [bold]named[/] "
                     f"{_e(', '.join(names.get(c, c) for c in sub.constraint_entities) or '-')}")
        for chunk_id in sub.chunk_ids:
            text = " ".join(result.chunk_texts.get(chunk_id, "").split())
            lines.append(f"  [cyan]{_e(chunk_id)}[/] ({_e(sub.roles.get(chunk_id, ''))}): {_e(text[:220])}")
    if result.sheet is not None:
        lines.append("[bold]facts[/]")
        lines.extend(f"  {_e(f'[{f.chunk_id}]')} {_e(f.paraphrase)}" for f in result.sheet.facts)
    if result.stopped:
        lines.append(f"[red]stopped at {result.stopped}[/]: {_e(result.reason)}")
    draft = result.draft
    if draft is not None:
        if draft.parse_error:
            lines.append(f"[red]parse error[/]: {_e(draft.parse_error)}; raw: {_e(repr(draft.raw[:300]))}")
        elif draft.declined:
            lines.append(f"[yellow]declined: no honest question[/]: {_e(draft.declined)}")
        else:
            lines.append(f"[bold green]Q[/] {_e(draft.question)}")
            lines.append(f"[bold green]A[/] {_e(draft.answer)}" + (f"  (aliases: {_e(', '.join(draft.answer_aliases))})"
                                                                   if draft.answer_aliases else ""))
            lines.extend(f"  step: {_e(s.chunk_id)} \"{_e(s.quote)}\" -> {_e(s.finding)}" for s in draft.steps)
    out.print(Panel("\n".join(lines), title=f"candidate {index}", expand=True), highlight=False)


def _e(value: object) -> str:
    """Corpus and model text shown inside Rich markup: brackets must not become tags."""
    return escape(str(value))


def register(app: typer.Typer) -> None:
    app.command("compose")(compose_command)
