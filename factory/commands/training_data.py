"""`factory generate-training-data`, `factory serve-training`, `factory deploy-training`.

One run now (Prefect's ephemeral mode, no server needed), or the scheduled deployment:
served from this process, or registered against a work pool whose workers run it.
All three take the flow's parameters (``TrainingRunParams``, one option per field); bad
values fail as one line before Prefect starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

from factory.params import TrainingRunParams, cli_options

def _parameters(params: TrainingRunParams) -> dict[str, Any]:
    from flows.deployments import training_parameters

    return training_parameters(params)


@cli_options(TrainingRunParams)
def generate_training_data_command(params: TrainingRunParams) -> None:
    """One run of the training set now: its per-run budget of candidates, appended to the set."""
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    parameters = _parameters(params)
    from flows.generate_training_data import generate_training_data

    result = generate_training_data(**parameters, run_id=params.run_id)
    typer.echo(json.dumps(result, sort_keys=True))  # one line, for scripts


def _deployment(params: TrainingRunParams, name: Optional[str], cron: Optional[str], timezone: Optional[str],
                paused: bool) -> Any:
    """The command's flow parameters, checked, and the deployment built from them (serve and deploy share it)."""
    from flows.deployments import training_deployment

    parameters = _parameters(params)
    return training_deployment(_name(name, params.training_set, params.lang, params.config), parameters,
                               cron=cron, timezone=timezone, paused=paused)


@cli_options(TrainingRunParams, leave_out=("run_id",))
def serve_training_command(
    params: TrainingRunParams,
    name: Optional[str] = typer.Option(None, "--name", help="deployment name (default: SET-LANG)"),
    cron: Optional[str] = typer.Option(None, "--cron", help="schedule, e.g. '0 */6 * * *' (training_data.cron)"),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="of the schedule (training_data.timezone)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="flow runs this process runs at once"),
    paused: bool = typer.Option(False, "--paused", help="register with the schedule paused (runs by hand only)"),
) -> None:
    """Serve the scheduled deployment from this process until Ctrl-C (needs PREFECT_API_URL)."""
    from flows.deployments import serve_training

    serve_training([_deployment(params, name, cron, timezone, paused)], limit=limit)


@cli_options(TrainingRunParams, leave_out=("run_id",))
def deploy_training_command(
    params: TrainingRunParams,
    work_pool: str = typer.Option(..., "--work-pool", help="a process work pool: `prefect worker start --pool NAME`"),
    name: Optional[str] = typer.Option(None, "--name", help="deployment name (default: SET-LANG)"),
    cron: Optional[str] = typer.Option(None, "--cron", help="schedule (training_data.cron)"),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="of the schedule (training_data.timezone)"),
    paused: bool = typer.Option(False, "--paused", help="register with the schedule paused"),
) -> None:
    """Register the scheduled deployment against a work pool; its workers run it (needs PREFECT_API_URL)."""
    from flows.deployments import deploy_training

    deployment = _deployment(params, name, cron, timezone, paused)
    for deployment_id in deploy_training([deployment], work_pool=work_pool):
        typer.echo(f"deployment generate-training-data/{deployment.name} ({deployment_id}) on work pool {work_pool}")


def _name(name: str | None, training_set: str | None, lang: str, config: str | None) -> str:
    if name:
        return name
    from factory.settings import load_settings

    return f"{training_set or load_settings(Path(config) if config else None).training_data.name}-{lang}"


def register(app: typer.Typer) -> None:
    app.command("generate-training-data")(generate_training_data_command)
    app.command("serve-training")(serve_training_command)
    app.command("deploy-training")(deploy_training_command)
