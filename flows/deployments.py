"""The scheduled training-data deployment: `generate_training_data` on a cron schedule.

Two ways to run it against a Prefect server (``prefect server start --host 127.0.0.1``):

* ``serve_training``: this process registers the deployment and runs its flow runs
  itself, each as a subprocess (``factory serve-training ...``). Stop it (Ctrl-C)
  before the server.
* ``deploy_training``: the deployment is registered against a work pool, and
  ``prefect worker start --pool NAME`` processes (one machine or several, each with the
  factory installed and the store's folder mounted) pick its runs up
  (``factory deploy-training --work-pool NAME ...``).

The flow is referenced by module path, so a worker needs the package, not this
checkout's files. Parameters are fixed at deployment time; a run started by hand can
override any of them (``prefect deployment run ... --param max_attempts=10``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory.errors import FactoryError
from factory.params import TrainingRunParams
from factory.settings import load_settings

FLOW_NAME = "generate-training-data"


class DeploymentError(FactoryError):
    pass


def training_parameters(params: TrainingRunParams) -> dict[str, Any]:
    """The flow's parameters, checked now (a bad value fails here, not at 3 a.m.), paths absolute.

    A run id is not a deployment parameter: every scheduled run gets a new one.
    """
    from flows.generate_training_data import resolve_training_run

    params = params.model_copy(update={"run_id": None})
    resolve_training_run(params)
    absolute = {key: str(Path(value).resolve()) for key in ("corpus", "store", "config", "export_out")
                if (value := getattr(params, key)) is not None}
    values = params.model_copy(update=absolute).model_dump()
    return {key: value for key, value in values.items() if value is not None}


def training_deployment(
    name: str,
    parameters: dict[str, Any],
    *,
    cron: str | None = None,
    timezone: str | None = None,
    paused: bool = False,
    concurrency_limit: int | None = None,
) -> Any:
    """A ``RunnerDeployment`` of ``generate_training_data`` with a cron schedule (settings'
    ``training_data.cron`` and ``.timezone`` unless given)."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from flows.generate_training_data import generate_training_data

    settings = load_settings(Path(parameters["config"]) if parameters.get("config") else None)
    cron = cron or settings.training_data.cron
    timezone = timezone or settings.training_data.timezone
    try:
        schedule = Cron(cron, timezone=timezone)
    except ValueError as exc:
        raise DeploymentError(f"--cron {cron!r} / --timezone {timezone!r}: {exc}") from exc
    set_name = parameters.get("training_set") or settings.training_data.name
    return generate_training_data.to_deployment(
        name=name,
        schedules=[schedule],
        parameters=parameters,
        paused=paused,
        concurrency_limit=concurrency_limit,
        description=f"training set {set_name!r} ({parameters['lang']}) from {parameters['corpus']} "
                    f"into {parameters['store']}",
        tags=["training-data", parameters["lang"], f"set:{set_name}"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def serve_training(deployments: list[Any], *, limit: int | None = None) -> None:
    """Register the deployments and run their flow runs from this process until stopped.

    Ctrl-C and SIGTERM both stop it cleanly. A process started in the background by a
    non-interactive shell (or by a parent that ignores SIGINT) inherits SIGINT as ignored,
    and Python then installs no KeyboardInterrupt handler: serve would never stop on
    Ctrl-C. So both handlers are set here explicitly.
    """
    import signal

    from prefect import serve

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    serve(*deployments, limit=limit)


def deploy_training(deployments: list[Any], *, work_pool: str) -> list[str]:
    """Register the deployments against a work pool; its workers run them. Returns their ids."""
    return [str(deployment.apply(work_pool_name=work_pool)) for deployment in deployments]
