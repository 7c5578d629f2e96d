"""`factory llm check`: is the backend there, how fast, does structured output work."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
from pydantic import BaseModel, Field
from rich.console import Console

from factory.errors import FactoryError

out = Console(soft_wrap=True)


class CapitalAnswer(BaseModel):
    """The tiny schema `llm check` asks for."""

    city: str = Field(description="the capital city")
    country: str = Field(description="the country it is the capital of")


def check(
    llm: Optional[str] = typer.Option(None, "--llm", help="backend spec, e.g. llamacpp:smollm2-135m, openai:URL#MODEL, fake"),
    threads: Optional[int] = typer.Option(None, help="llama.cpp CPU threads (default: settings, 0 = all cores)"),
    max_tokens: int = typer.Option(96, help="tokens for the speed probe"),
    config: Optional[Path] = typer.Option(None, "--config", help="factory.toml / .yaml"),
) -> None:
    """Print the backend, its model and context size, one structured completion and tokens per second."""
    from factory.llm import Gateway, LLMRequest, Sampling, make_llm
    from factory.settings import load_settings

    settings = load_settings(config, **{"llm.spec": llm, "llm.threads": threads}).llm
    start = time.perf_counter()
    backend = make_llm(settings.spec, settings)
    ready_s = time.perf_counter() - start
    gateway = Gateway(backend, None, stage_default="llm-check", repair=settings.repair)
    out.print(f"backend   {backend.name}")
    out.print(f"model     {backend.model}")
    window = backend.context_tokens
    out.print(f"context   {window} tokens" if window else "context   unknown (the backend does not say; set context=TOKENS)")
    note = getattr(backend, "note", "")
    if note:
        out.print(f"note      {note}")
    languages = getattr(backend, "languages", ())
    if languages:
        out.print(f"languages {', '.join(languages)} only")
    out.print(f"ready in  {ready_s:.2f} s")
    cpu = getattr(backend, "cpu_features", None)
    if cpu is not None:
        out.print(f"cpu build {' '.join(cpu) or '(no features reported)'}", highlight=False)

    structured = gateway.complete(
        LLMRequest.chat(
            "You answer with one JSON object.",
            "What is the capital of France? Give the city and the country.",
            output=CapitalAnswer,
            sampling=Sampling(max_tokens=64),
        )
    )
    if structured.error:
        raise FactoryError(f"{settings.spec}: the backend failed: {structured.error}")
    out.print(f"structured answer ({structured.latency_s:.2f} s): {json.dumps(structured.parsed, ensure_ascii=False)}",
              highlight=False)
    if structured.parse_error:
        out.print(f"[red]structured output failed[/]: {structured.parse_error}; raw: {structured.text[:200]!r}",
                  highlight=False)

    free = gateway.complete(
        LLMRequest.chat(None, "Write a short paragraph about rivers.", sampling=Sampling(max_tokens=max_tokens))
    )
    if free.error:
        raise FactoryError(f"{settings.spec}: the backend failed: {free.error}")
    speed = free.tokens_out / free.latency_s if free.latency_s > 0 else 0.0
    out.print(
        f"speed     {free.tokens_out} tokens in {free.latency_s:.2f} s = {speed:.1f} tokens/s "
        f"(prompt {free.tokens_in} tokens; includes prompt processing)"
    )
    # a real prompt, in a child process: a broken native build passes the short probes above
    # and dies by a signal on the first long one
    from factory.llm.probe import run_probe

    long = run_probe(settings.spec, threads=settings.threads)
    if long.error:
        raise FactoryError(f"{settings.spec}: the backend failed on a long prompt: {long.error}")
    out.print(f"long      a {long.tokens_in}-token prompt answered in {long.latency_s:.2f} s (in a child process)")
    if structured.parse_error:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="LLM backends: check one.", no_args_is_help=True)
    group.command("check")(check)
    app.add_typer(group, name="llm")
