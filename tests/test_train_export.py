"""Trajectory export from a run made with the scripted fake, and the ``export`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.commands.export import register
from amemgym.config import load_config
from amemgym.data import load_environment
from amemgym.errors import ConfigError, RunError
from amemgym.llm import LLMClient
from amemgym.prompts import render
from amemgym.run import Runner
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import ScriptedBackend
from amemgym.train import export_run

# (period 1, question 0) answered with a wrong combination, so one reward is 0.
PICKS = {(1, 0): ["fixed_daytime", "casual_5k"]}


@pytest.fixture
async def rundir(original_env_path: Path, tmp_path: Path) -> Path:
    env = load_environment(original_env_path)
    backend = ScriptedBackend(RunScript(env.users[0], PICKS))
    llm = LLMClient(backends={r: backend for r in ("agent", "simulator")}, backoff_base=0.001)
    await Runner(env, resolve_agent("native"), tmp_path / "run", load_config("tiny"), llm).run()
    return tmp_path / "run"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def recorded(rundir: Path) -> list[dict]:
    return lines(next((rundir / "users").iterdir()) / "sessions.jsonl")


def test_openai_chat_one_line_per_session(rundir: Path, tmp_path: Path) -> None:
    export_run(rundir, tmp_path / "out.jsonl")
    got = lines(tmp_path / "out.jsonl")
    sessions = recorded(rundir)
    assert len(got) == len(sessions)
    assert all(line["messages"][0] == {"role": "system", "content": render("agent_system")} for line in got)
    assert [line["messages"][1:] for line in got] == [s["messages"] for s in sessions]


def test_openai_chat_episode_with_evaluation_weights(rundir: Path, tmp_path: Path) -> None:
    summary = export_run(rundir, tmp_path / "out.jsonl", with_evaluation=True, unit="episode")
    got = lines(tmp_path / "out.jsonl")
    assert summary.evaluations == 6 and len(got) == 1 + 6
    evals = got[1:]
    weights = [line["messages"][-1]["weight"] for line in evals]
    assert sorted(weights) == [0, 1, 1, 1, 1, 1]
    wrong = evals[weights.index(0)]["messages"]
    period1_msgs = sum(len(s["messages"]) for s in recorded(rundir) if s["period"] <= 1)
    assert len(wrong) == 1 + period1_msgs + 2


def test_jsonl_messages_and_rewards(rundir: Path, tmp_path: Path) -> None:
    export_run(rundir, tmp_path / "out.jsonl", fmt="jsonl", with_evaluation=True)
    got = lines(tmp_path / "out.jsonl")
    msgs = [x for x in got if x["kind"] == "message"]
    assert [m["content"] for m in msgs] == [m["content"] for s in recorded(rundir) for m in s["messages"]]
    answers = [x for x in got if x["kind"] == "evaluation" and x["role"] == "assistant"]
    assert [a["reward"] for a in answers].count(0.0) == 1
    wrong = next(a for a in answers if a["reward"] == 0.0)
    assert (wrong["period"], wrong["question"]) == (1, 0) and wrong["choice"] != wrong["gold"]
    assert len([x for x in got if x["kind"] == "probe"]) == 12


def test_bad_inputs(rundir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown export format"):
        export_run(rundir, tmp_path / "o.jsonl", fmt="csv")
    with pytest.raises(RunError, match="not a run directory"):
        export_run(tmp_path / "nowhere", tmp_path / "o.jsonl")


def test_command(rundir: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps typer from collapsing the app into its only command
        pass

    res = CliRunner().invoke(app, ["export", str(rundir), "--format", "jsonl", "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and (tmp_path / "o.jsonl").exists()
    bad = CliRunner().invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "x.jsonl")])
    assert bad.exit_code == 2 and "not a run directory" in bad.output
