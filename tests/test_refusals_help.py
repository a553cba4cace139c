"""Refusals that help: they name what differs, what is wrong, and what was probably meant."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.testing.fake_endpoint import FakeEndpoint


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_different_run_setting_is_named(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--set", "run.reply_max_tokens=64"])
    assert again.exit_code == 2
    flat = _flat(again.output)
    assert "holds a run with a different run" in flat and "reply_max_tokens" in flat and "64" in flat


def test_a_different_agent_is_named(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1"]).exit_code == 0
    again = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--agent", "awi"])
    assert again.exit_code == 2 and "'native'" in again.output and "'awi'" in again.output


def test_off_policy_from_a_source_with_fewer_users_says_what_is_wrong(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(tmp_path / "env")])
    assert gen.exit_code == 0, gen.output
    env = tmp_path / "env" / "data.json"
    src = tmp_path / "src"
    first = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "tiny", "--out", str(src), "--limit", "1"])
    assert first.exit_code == 0, first.output
    calls = endpoint.calls
    res = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "tiny", "--out", str(tmp_path / "replay"),
                                   "--off-policy", str(src)])
    flat = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "re-run" not in flat and "retry" not in flat
    assert "2 of this run's 3 users" in flat and "--limit 1" in flat
    assert endpoint.calls == calls and not (tmp_path / "replay").exists()


def test_an_agent_typo_gets_a_suggestion() -> None:
    res = CliRunner().invoke(app, ["run", "--agent", "nativ", "--out", "unused"])
    assert res.exit_code == 2 and "did you mean 'native'" in _flat(res.output)


def test_a_budget_env_lists_its_own_agents(tmp_path: Path) -> None:
    gen = CliRunner().invoke(app, ["generate", "--family", "budget", "--domain", "films", "--out", str(tmp_path / "e")])
    assert gen.exit_code == 0, gen.output
    env = next((tmp_path / "e").rglob("data.json"))
    assert json.loads(env.read_text()).get("family") == "budget"
    res = CliRunner().invoke(app, ["run", "--env", str(env), "--agent", "vectr", "--out", str(tmp_path / "r")])
    flat = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "did you mean 'vector'" in flat
    assert all(name in flat for name in ("vector", "long-context", "llm"))


def test_off_policy_from_a_trials_output_names_a_trial(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    src = tmp_path / "src"
    assert CliRunner().invoke(app, ["run", "--out", str(src), "--limit", "1", "--trials", "2"]).exit_code == 0
    res = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--limit", "1", "--off-policy", str(src)])
    assert res.exit_code == 2 and "trial_1" in res.output and "re-run" not in res.output
