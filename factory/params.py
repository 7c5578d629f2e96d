"""The parameters of the factory's flow entry points, each list declared once, as a model.

``build-benchmark`` (``BuildParams``) and ``generate-training-data`` (its command,
its serve and deploy commands and the deployment's parameters: ``TrainingRunParams``)
take these. A command gets one Typer option per field (``cli_options``: flag, help and
bounds come from the field); a Prefect flow keeps a flat signature of the same names,
because the Prefect UI and ``--param`` need one, and ``tests/flows/test_params.py``
checks that signature against the model so the two cannot drift. Everything between
the command line and the flow passes the model.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo


def _flag(flag: str, help: str, **field: Any) -> Any:
    return Field(description=help, json_schema_extra={"flag": flag}, **field)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def flat(self) -> dict[str, Any]:
        """Keyword arguments for the flow."""
        return self.model_dump()


class BuildParams(Params):
    """`factory build-benchmark` and the `build_benchmark` flow."""

    lang: str = _flag("--lang", "en or ru")
    corpus: str = _flag("--corpus", "corpus file or folder (jsonl, parquet, text files)")
    n: Optional[int] = _flag("--n", "accepted tasks wanted (settings: build.n)", default=None, ge=1)
    llm_spec: Optional[str] = _flag("--llm", "openai:URL#MODEL, llamacpp:NAME_OR_PATH or fake", default=None)
    out: str = _flag("--out", "the benchmark folder, e.g. outputs/NAME")
    store: Optional[str] = _flag("--store", "store folder (default OUT/store)", default=None)
    config: Optional[str] = _flag("--config", "factory.toml or YAML run config", default=None)
    seed: Optional[int] = _flag("--seed", "default: settings", default=None)
    profile: Optional[str] = _flag("--profile", "full or demo (demo: cheaper agent checks, same validators)",
                                   default=None)
    task_runner: str = _flag("--task-runner", "threads (default) or dask", default="threads")
    concurrency: Optional[int] = _flag("--concurrency", "candidates in flight (generate.concurrency)", default=None,
                                       ge=1)
    max_attempts: Optional[int] = _flag("--max-attempts", "candidate budget (default n x attempts_per_task)",
                                        default=None, ge=1)
    token_budget: Optional[int] = _flag("--token-budget", "stop starting candidates after this many tokens",
                                        default=None, ge=1)


class TrainingRunParams(Params):
    """One run of a training set: `factory generate-training-data` and the scheduled deployment."""

    corpus: str = _flag("--corpus", "corpus file or folder (jsonl, parquet, text files)")
    lang: str = _flag("--lang", "en or ru")
    store: str = _flag("--store", "the store the training set grows in")
    llm_spec: Optional[str] = _flag("--llm", "openai:URL[,URL2,...]#MODEL, llamacpp:NAME_OR_PATH or fake",
                                    default=None)
    training_set: Optional[str] = _flag("--training-set", "the set runs append to (settings: training_data.name)",
                                        default=None)
    max_attempts: Optional[int] = _flag("--max-attempts", "candidates per run (training_data.max_attempts)",
                                        default=None, ge=1)
    token_budget: Optional[int] = _flag("--token-budget", "tokens per run (training_data.token_budget)",
                                        default=None, ge=1)
    n: Optional[int] = _flag("--n", "accepted tasks per run at most (training_data.n)", default=None, ge=1)
    seed: Optional[int] = _flag("--seed", "default: settings", default=None)
    config: Optional[str] = _flag("--config", "factory.toml or YAML run config", default=None)
    task_runner: str = _flag("--task-runner", "threads (default) or dask", default="threads")
    concurrency: Optional[int] = _flag("--concurrency", "candidates in flight (generate.concurrency)", default=None,
                                       ge=1)
    dask_address: Optional[str] = _flag("--dask-address", "scheduler of a running Dask cluster (dask.address)",
                                        default=None)
    export_out: Optional[str] = _flag("--export-out", "export the training data here after each run", default=None)
    run_id: Optional[str] = _flag("--run-id", "continue a run cut short (default: a new run)", default=None)


def _option(name: str, info: FieldInfo) -> inspect.Parameter:
    import typer

    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    bounds = {"min": m.ge for m in info.metadata if getattr(m, "ge", None) is not None}
    default = ... if info.is_required() else info.default
    option = typer.Option(default, str(extra["flag"]), help=info.description, **bounds)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=info.annotation)


def cli_options(model: type[Params], *, leave_out: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Any]:
    """Give a Typer command one option per field of ``model`` (but ``leave_out``); the command
    is called with the model as its first argument, ``params``, and its own options after it."""
    fields = {name: info for name, info in model.model_fields.items() if name not in leave_out}

    def wrap(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = inspect.get_annotations(command, eval_str=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(command).parameters.values()]
        if not own or own[0].name != "params":
            raise TypeError(f"{command.__name__}: the first parameter must be `params`")
        shared = [_option(name, info) for name, info in fields.items()]

        def run(**values: Any) -> Any:
            params = model(**{name: values.pop(name) for name in fields})
            return command(params, **values)

        run.__name__, run.__qualname__, run.__doc__ = command.__name__, command.__qualname__, command.__doc__
        run.__module__ = command.__module__
        run.__signature__ = inspect.Signature([*shared, *own[1:]])  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in [*shared, *own[1:]]}
        return run

    return wrap
