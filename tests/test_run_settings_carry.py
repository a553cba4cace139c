"""Settings that used to change silently: the environment's protocol, and --trials over a single run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.testing.fake_endpoint import FakeEndpoint


def _generate(tmp_path: Path, config: str) -> Path:
    # The preset's name travels in each user's _amemgym metadata; the sizes are cut down to keep the run short.
    res = CliRunner().invoke(app, ["generate", "--config", config, "--users", "1", "--set", "env.num_periods=1",
                                   "--set", "env.num_questions=2", "--out", str(tmp_path / "env")])
    assert res.exit_code == 0, res.output
    return tmp_path / "env" / "data.json"


def test_a_v1_base_environment_runs_with_its_protocol(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    env = _generate(tmp_path, "v1.base")
    res = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]
    assert config["env"]["name"] == "v1.base"
    assert config["run"]["reply_max_tokens"] == 8192 and config["run"]["agent_system_prompt"] is False
    assert "protocol v1.base" in res.output  # where the settings came from is said


def test_a_run_that_overrides_the_environments_protocol_says_so(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    env = _generate(tmp_path, "v1.base")
    res = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "small", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]
    assert config["run"]["reply_max_tokens"] != 8192
    flat = " ".join(res.output.split())
    assert "generated with config v1.base" in flat and "--config small" in flat


def test_trials_over_a_single_run_are_refused(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1"])
    assert first.exit_code == 0, first.output
    calls = endpoint.calls
    again = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--trials", "2"])
    assert again.exit_code == 2, again.output
    assert "single run" in again.output and "--trials" in again.output
    assert not (out / "trial_1").exists() and endpoint.calls == calls


def test_a_single_run_over_trials_is_refused(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--trials", "2"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1"])
    assert again.exit_code == 2, again.output
    assert "--trials 2" in again.output and not (out / "manifest.json").exists()


def test_the_inspect_task_takes_the_environments_protocol_too(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai._util.registry import registry_params

    from amemgym.inspect_tasks import amemgym_memory

    env = _generate(tmp_path, "v1.base")
    from amemgym.config import load_config

    cfg = load_config(registry_params(amemgym_memory(env=str(env)).solver)["config"])
    assert cfg.env.name == "v1.base" and cfg.run.reply_max_tokens == 8192


def test_the_inspect_solver_is_given_a_reference_not_settings_that_may_hold_a_key(tmp_path: Path) -> None:
    # Inspect writes solver arguments into its eval logs; a base URL may carry a key in its query string.
    pytest.importorskip("inspect_ai")
    from inspect_ai._util.registry import registry_params

    from amemgym.inspect_tasks import amemgym_memory

    planted = "PLANTEDqueryKEY0123456789"
    config = tmp_path / "cfg.yaml"
    config.write_text(f"llm:\n  default:\n    base_url: http://127.0.0.1:9/v1?api_key={planted}\n    model: m\n")
    params = registry_params(amemgym_memory(config=str(config)).solver)
    assert planted not in json.dumps(params) and params["config"] == str(config.resolve())
