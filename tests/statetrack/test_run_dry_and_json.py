"""``run --dry-run`` estimates before any call, ``run --json`` summarises for machines, and replays are said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.statetrack.trials import trial_spread
from amemgym.testing.fake_endpoint import FakeEndpoint


@pytest.fixture
def env3(endpoint: FakeEndpoint, tmp_path: Path) -> Path:
    gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(tmp_path / "env")])
    assert gen.exit_code == 0, gen.output
    return tmp_path / "env" / "data.json"


def test_dry_run_estimates_what_the_run_then_calls(endpoint: FakeEndpoint, env3: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    dry = CliRunner().invoke(app, ["run", "--env", str(env3), "--config", "tiny", "--limit", "2", "--out", str(out),
                                   "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert endpoint.calls == 0 and endpoint.model_calls == 0 and not out.exists()
    estimate = json.loads(dry.stdout)
    roles = {r["role"]: r for r in estimate["roles"]}
    assert set(roles) == {"simulator", "agent"} and estimate["users"] == 2
    assert all(r["prompt_tokens"] > 0 and 0 < r["completion_tokens"] <= r["completion_tokens_max"]
               for r in roles.values())
    real = CliRunner().invoke(app, ["run", "--env", str(env3), "--config", "tiny", "--limit", "2", "--out", str(out),
                                    "--no-cache"])
    assert real.exit_code == 0, real.output
    usage = json.loads((out / "metrics.json").read_text())["usage"]["last_invocation"]
    for role in ("simulator", "agent"):  # every request, whether sent or shared with an identical one in flight
        assert usage[role]["calls"] + usage[role]["cache_hits"] == roles[role]["calls"], role


def test_dry_run_prints_a_table_per_role(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--dry-run", "--trials", "2"])
    assert res.exit_code == 0, res.output
    assert "simulator" in res.output and "agent" in res.output and "2 trials" in " ".join(res.output.split())
    assert endpoint.calls == 0 and not (tmp_path / "r").exists()


def test_json_puts_only_the_summary_on_stdout(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    metrics = json.loads((out / "metrics.json").read_text())
    assert summary["run_dir"] == str(out) and summary["exit_code"] == 0 and summary["complete"] is True
    assert summary["metrics"]["overall"]["mean"] == metrics["overall"]["overall"]["mean"]
    assert summary["degenerate"] == bool(metrics["overall"]["flags"])
    if summary["degenerate"]:
        assert summary["memory_score"] is None  # undefined, as the console shows it
    assert "sessions" in res.stderr  # the human-readable lines went to stderr


def test_a_replay_from_the_cache_is_said(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    first = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "a"), "--limit", "1", "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["cache"]["replies_from_cache"] == 0
    assert "response cache" not in first.stderr
    second = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "b"), "--limit", "1", "--json"])
    assert second.exit_code == 0, second.output
    cache = json.loads(second.stdout)["cache"]
    assert cache["replies_from_cache"] > 0 and cache["replayed"] is True
    assert "response cache" in " ".join(second.stderr.split()) and "--no-cache" in second.stderr


def test_trials_json_lists_each_trial(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "t"), "--limit", "1", "--trials", "2", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert [t["run_dir"] for t in summary["trials"]] == [str(tmp_path / "t" / f"trial_{k}") for k in (1, 2)]
    assert "spread" in summary and summary["exit_code"] == 0
    assert all(t["degenerate"] for t in summary["trials"])  # the fake model's upper bound is near random
    assert "memory_score: undefined (2 of 2 trials DEGENERATE)" in res.stderr
    assert "memory_score: mean" not in res.stderr


def test_a_budget_env_refuses_dry_run_and_json_in_one_line(tmp_path: Path) -> None:
    gen = CliRunner().invoke(app, ["generate", "--family", "budget", "--domain", "films", "--out", str(tmp_path / "e")])
    assert gen.exit_code == 0, gen.output
    env = next((tmp_path / "e").rglob("data.json"))
    res = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "r"), "--dry-run", "--json"])
    assert res.exit_code == 2 and "--dry-run, --json not supported" in res.output and not (tmp_path / "r").exists()


def test_an_unfinished_trial_is_left_out_of_the_spread(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "t"), "--limit", "1", "--trials", "2"])
    assert res.exit_code == 0, res.output
    dirs = [tmp_path / "t" / f"trial_{k}" for k in (1, 2)]
    path = dirs[1] / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["complete"] = False  # as a trial whose later periods failed leaves it
    path.write_text(json.dumps(metrics))
    summary = trial_spread(dirs)
    # Before: its numbers over the periods it reached went into the mean and std as a whole trial's.
    assert summary["unfinished"] == ["trial_2"] and summary["spread"]["overall"]["n"] == 1


def test_a_refusal_with_json_still_prints_one_json_object(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--env", str(tmp_path / "missing.json"), "--out", str(tmp_path / "r"),
                                   "--json"])
    assert res.exit_code == 2
    error = json.loads(res.stdout)  # nothing but the object on stdout
    assert error["exit_code"] == 2 and "missing.json" in error["error"]
    assert error["error"] in res.stderr  # the same line a human reads
