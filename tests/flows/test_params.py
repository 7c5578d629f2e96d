"""Each entry point's parameters are declared once (factory/params.py): the Prefect flows'
flat signatures (which the UI and `--param` need) and the commands' options follow the model."""

from __future__ import annotations

import inspect

import pytest
import typer

from factory.params import BuildParams, Params, TrainingRunParams


def _flow_parameters(flow) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(flow.fn).parameters.values()]


def _model_parameters(model: type[Params]) -> list[tuple[str, object]]:
    return [(name, inspect.Parameter.empty if info.is_required() else info.default)
            for name, info in model.model_fields.items()]


def test_the_flows_take_exactly_the_models_fields() -> None:
    from flows.build_benchmark import build_benchmark
    from flows.generate_training_data import generate_training_data

    build = dict(_model_parameters(BuildParams))
    build["n"] = build["llm_spec"] = inspect.Parameter.empty  # required by position in the flow, optional values
    assert _flow_parameters(build_benchmark) == list(build.items())
    assert _flow_parameters(generate_training_data) == _model_parameters(TrainingRunParams)


def _options(command_name: str) -> dict[str, object]:
    from factory.cli import app

    command = typer.main.get_command(app).commands[command_name]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params if p.param_type_name == "option"}


@pytest.mark.parametrize("command,model,left_out", [
    ("build-benchmark", BuildParams, set()),
    ("generate-training-data", TrainingRunParams, set()),
    ("serve-training", TrainingRunParams, {"run_id"}),
    ("deploy-training", TrainingRunParams, {"run_id"}),
])
def test_the_commands_have_one_option_per_field(command: str, model: type[Params], left_out: set[str]) -> None:
    options = _options(command)
    for name, info in model.model_fields.items():
        if name in left_out:
            assert name not in options
            continue
        option = options[name]
        assert option.opts == [info.json_schema_extra["flag"]] and option.required == info.is_required()
        assert option.help == info.description


def test_a_command_hands_its_flags_to_the_model(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import flows.deployments
    from factory.cli import app

    seen = []
    monkeypatch.setattr(flows.deployments, "training_parameters", lambda params: seen.append(params) or {})
    monkeypatch.setattr(flows.deployments, "training_deployment", lambda *a, **k: None)
    monkeypatch.setattr(flows.deployments, "serve_training", lambda *a, **k: None)
    result = CliRunner().invoke(app, ["serve-training", "--corpus", "c.jsonl", "--lang", "ru", "--store", "s",
                                      "--max-attempts", "7", "--cron", "0 * * * *"])
    assert result.exit_code == 0, result.output
    assert seen == [TrainingRunParams(corpus="c.jsonl", lang="ru", store="s", max_attempts=7)]
