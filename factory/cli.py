"""The `factory` command. Each area registers its subcommands from factory/commands/."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from factory.errors import FactoryError

app = typer.Typer(
    name="factory",
    help="Build hard, verifiable multi-hop search tasks and benchmarks with fixed indices.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err = Console(stderr=True)

# one module per area; each defines register(app)
COMMAND_MODULES = [
    "factory.commands.corpus",
    "factory.commands.store",
    "factory.commands.entity",
    "factory.commands.index",
    "factory.commands.llm",
    "factory.commands.compose",
    "factory.commands.generate",
    "factory.commands.cost",
    "factory.commands.evaluate",
    "factory.commands.build",
    "factory.commands.audit",
    "factory.commands.training",
    "factory.commands.training_data",
]


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # area not built yet
                continue
            raise
        module.register(app)


_register()


def main() -> None:
    try:
        app()
    except FactoryError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)  # one line; corpus and user
        # strings in it are text, not Rich markup ('[/]' in an id would raise, '[note]' would vanish)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
