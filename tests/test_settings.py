from pathlib import Path

import pytest

from factory.settings import SettingsError, load_settings


def test_defaults_then_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "factory.toml"
    config.write_text("seed = 5\n[ingest]\nchunk_tokens = 120\nminhash_perm = 32\n")
    assert load_settings().ingest.chunk_tokens == 200  # default

    from_file = load_settings(config)
    assert (from_file.seed, from_file.ingest.chunk_tokens) == (5, 120)

    monkeypatch.setenv("FACTORY_INGEST__CHUNK_TOKENS", "150")
    from_env = load_settings(config)
    assert from_env.ingest.chunk_tokens == 150  # environment beats the file
    assert from_env.ingest.minhash_perm == 32  # the rest of the file still applies

    from_flag = load_settings(config, **{"ingest.chunk_tokens": 99, "seed": None})
    assert from_flag.ingest.chunk_tokens == 99  # flags win
    assert from_flag.seed == 5  # a flag left unset (None) changes nothing


def test_yaml_config_and_dump_round_trip(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  spec: fake\n  concurrency: 8\n")
    settings = load_settings(config)
    assert settings.llm.spec == "fake" and settings.llm.concurrency == 8
    assert '"spec": "fake"' in settings.dump()


@pytest.mark.parametrize(
    "name, text, needle",
    [
        ("bad.toml", "seed = [", "bad.toml"),
        ("bad.yaml", "- just\n- a list\n", "top level"),
        ("typo.toml", "[ingest]\nchunk_tokenz = 3\n", "chunk_tokenz"),
        ("range.toml", "[ingest]\nchunk_tokens = 1\n", "chunk_tokens"),
    ],
)
def test_bad_config_names_the_problem(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SettingsError, match=needle):
        load_settings(path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "nope.toml")
