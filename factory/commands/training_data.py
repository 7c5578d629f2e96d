"""`factory generate-training-data`, `factory serve-training`, `factory deploy-training`.

One run now (Prefect's ephemeral mode, no server needed), or the scheduled deployment:
served from this process, or registered against a work pool whose workers run it.
All three share the flow's parameters; bad values fail as one line before Prefect starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

Corpus = typer.Option(..., "--corpus", help="corpus file or folder (jsonl, parquet, text files)")
Lang = typer.Option(..., "--lang", help="en or ru")
StorePath = typer.Option(..., "--store", help="the store the training set grows in")
Llm = typer.Option(None, "--llm", help="openai:URL[,URL2,...]#MODEL, llamacpp:NAME_OR_PATH or fake")
TrainingSet = typer.Option(None, "--training-set", help="the set runs append to (settings: training_data.name)")
MaxAttempts = typer.Option(None, "--max-attempts", min=1, help="candidates per run (training_data.max_attempts)")
TokenBudget = typer.Option(None, "--token-budget", min=1, help="tokens per run (training_data.token_budget)")
PerRunN = typer.Option(None, "--n", min=1, help="accepted tasks per run at most (training_data.n)")
Seed = typer.Option(None, "--seed")
Config = typer.Option(None, "--config", help="factory.toml or YAML run config")
TaskRunner = typer.Option("threads", "--task-runner", help="threads (default) or dask")
Concurrency = typer.Option(None, "--concurrency", min=1, help="candidates in flight (generate.concurrency)")
DaskAddress = typer.Option(None, "--dask-address", help="scheduler of a running Dask cluster (dask.address)")
ExportOut = typer.Option(None, "--export-out", help="export the training data here after each run")


def _parameters(**values: Any) -> dict[str, Any]:
    from flows.deployments import training_parameters

    for key in ("corpus", "store", "config", "export_out"):
        if values.get(key) is not None:
            values[key] = str(values[key])
    return training_parameters(**values)


def generate_training_data_command(
    corpus: Path = Corpus, lang: str = Lang, store: Path = StorePath, llm: Optional[str] = Llm,
    training_set: Optional[str] = TrainingSet, max_attempts: Optional[int] = MaxAttempts,
    token_budget: Optional[int] = TokenBudget, n: Optional[int] = PerRunN, seed: Optional[int] = Seed,
    config: Optional[Path] = Config, task_runner: str = TaskRunner, concurrency: Optional[int] = Concurrency,
    dask_address: Optional[str] = DaskAddress, export_out: Optional[Path] = ExportOut,
    run_id: Optional[str] = typer.Option(None, "--run-id", help="continue a run cut short (default: a new run)"),
) -> None:
    """One run of the training set now: its per-run budget of candidates, appended to the set."""
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    parameters = _parameters(corpus=corpus, lang=lang, store=store, llm_spec=llm, training_set=training_set,
                             max_attempts=max_attempts, token_budget=token_budget, n=n, seed=seed, config=config,
                             task_runner=task_runner, concurrency=concurrency, dask_address=dask_address,
                             export_out=export_out)
    from flows.generate_training_data import generate_training_data

    result = generate_training_data(**parameters, run_id=run_id)
    typer.echo(json.dumps(result, sort_keys=True))  # one line, for scripts


def _deployment(name: Optional[str], cron: Optional[str], timezone: Optional[str], paused: bool, **values: Any):
    """The command's flow parameters, checked, and the deployment built from them (serve and deploy share it)."""
    from flows.deployments import training_deployment

    parameters = _parameters(**values)
    return training_deployment(_name(name, values["training_set"], values["lang"], values["config"]), parameters,
                               cron=cron, timezone=timezone, paused=paused)


def serve_training_command(
    corpus: Path = Corpus, lang: str = Lang, store: Path = StorePath, llm: Optional[str] = Llm,
    training_set: Optional[str] = TrainingSet, max_attempts: Optional[int] = MaxAttempts,
    token_budget: Optional[int] = TokenBudget, n: Optional[int] = PerRunN, seed: Optional[int] = Seed,
    config: Optional[Path] = Config, task_runner: str = TaskRunner, concurrency: Optional[int] = Concurrency,
    dask_address: Optional[str] = DaskAddress, export_out: Optional[Path] = ExportOut,
    name: Optional[str] = typer.Option(None, "--name", help="deployment name (default: SET-LANG)"),
    cron: Optional[str] = typer.Option(None, "--cron", help="schedule, e.g. '0 */6 * * *' (training_data.cron)"),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="of the schedule (training_data.timezone)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="flow runs this process runs at once"),
    paused: bool = typer.Option(False, "--paused", help="register with the schedule paused (runs by hand only)"),
) -> None:
    """Serve the scheduled deployment from this process until Ctrl-C (needs PREFECT_API_URL)."""
    from flows.deployments import serve_training

    deployment = _deployment(name, cron, timezone, paused, corpus=corpus, lang=lang, store=store, llm_spec=llm,
                             training_set=training_set, max_attempts=max_attempts, token_budget=token_budget, n=n,
                             seed=seed, config=config, task_runner=task_runner, concurrency=concurrency,
                             dask_address=dask_address, export_out=export_out)
    serve_training([deployment], limit=limit)


def deploy_training_command(
    corpus: Path = Corpus, lang: str = Lang, store: Path = StorePath, llm: Optional[str] = Llm,
    training_set: Optional[str] = TrainingSet, max_attempts: Optional[int] = MaxAttempts,
    token_budget: Optional[int] = TokenBudget, n: Optional[int] = PerRunN, seed: Optional[int] = Seed,
    config: Optional[Path] = Config, task_runner: str = TaskRunner, concurrency: Optional[int] = Concurrency,
    dask_address: Optional[str] = DaskAddress, export_out: Optional[Path] = ExportOut,
    work_pool: str = typer.Option(..., "--work-pool", help="a process work pool: `prefect worker start --pool NAME`"),
    name: Optional[str] = typer.Option(None, "--name", help="deployment name (default: SET-LANG)"),
    cron: Optional[str] = typer.Option(None, "--cron", help="schedule (training_data.cron)"),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="of the schedule (training_data.timezone)"),
    paused: bool = typer.Option(False, "--paused", help="register with the schedule paused"),
) -> None:
    """Register the scheduled deployment against a work pool; its workers run it (needs PREFECT_API_URL)."""
    from flows.deployments import deploy_training

    deployment = _deployment(name, cron, timezone, paused, corpus=corpus, lang=lang, store=store, llm_spec=llm,
                             training_set=training_set, max_attempts=max_attempts, token_budget=token_budget, n=n,
                             seed=seed, config=config, task_runner=task_runner, concurrency=concurrency,
                             dask_address=dask_address, export_out=export_out)
    for deployment_id in deploy_training([deployment], work_pool=work_pool):
        typer.echo(f"deployment generate-training-data/{deployment.name} ({deployment_id}) on work pool {work_pool}")


def _name(name: str | None, training_set: str | None, lang: str, config: Path | None) -> str:
    if name:
        return name
    from factory.settings import load_settings

    return f"{training_set or load_settings(config).training_data.name}-{lang}"


def register(app: typer.Typer) -> None:
    app.command("generate-training-data")(generate_training_data_command)
    app.command("serve-training")(serve_training_command)
    app.command("deploy-training")(deploy_training_command)
