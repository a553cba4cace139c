"""Trajectory export from a run made with the scripted fake, and the ``export`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.commands.export import register
from amemgym.config import load_config
from amemgym.errors import ConfigError, RunError
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient
from amemgym.prompts import render
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import ScriptedBackend
from amemgym.train import export_run
from amemgym.train.export import FORMATS, JSONL_KEYS, UNITS

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


def test_default_unit_keeps_the_whole_conversation(rundir: Path, tmp_path: Path) -> None:
    export_run(rundir, tmp_path / "out.jsonl")
    got = lines(tmp_path / "out.jsonl")
    assert len(got) == 1  # one user: one episode line
    assert got[0]["messages"][1:] == [m for s in recorded(rundir) for m in s["messages"]]


def test_openai_chat_one_line_per_session(rundir: Path, tmp_path: Path) -> None:
    export_run(rundir, tmp_path / "out.jsonl", unit="session")
    got = lines(tmp_path / "out.jsonl")
    sessions = recorded(rundir)
    assert len(got) == len(sessions)
    assert all(line["messages"][0] == {"role": "system", "content": render("agent_system")} for line in got)
    assert [line["messages"][1:] for line in got] == [s["messages"] for s in sessions]


def test_openai_chat_episode_with_evaluation_weights(rundir: Path, tmp_path: Path) -> None:
    summary = export_run(rundir, tmp_path / "out.jsonl", with_evaluation=True, unit="episode")
    got = lines(tmp_path / "out.jsonl")
    # The one wrong answer has nothing to learn from, so it is left out (and counted), not written with weight 0.
    assert summary.evaluations == 5 and summary.left_out == 1 and len(got) == 1 + 5
    evals = got[1:]
    assert [line["messages"][-1]["weight"] for line in evals] == [1] * 5
    assert all(m.get("weight") == 0 for line in evals for m in line["messages"][1:-1] if m["role"] == "assistant")
    first = evals[0]["messages"]
    period0_msgs = sum(len(s["messages"]) for s in recorded(rundir) if s["period"] <= 0)
    assert len(first) == 1 + period0_msgs + 2


def test_session_unit_evaluations_carry_the_conversation_too(rundir: Path, tmp_path: Path) -> None:
    summary = export_run(rundir, tmp_path / "out.jsonl", with_evaluation=True, unit="session")
    got = lines(tmp_path / "out.jsonl")
    evals = got[len(recorded(rundir)):]
    assert len(evals) == summary.evaluations == 5
    assert all(len(line["messages"]) > 3 for line in evals)


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
    with pytest.raises(ConfigError, match="known: episode, session"):
        export_run(rundir, tmp_path / "o.jsonl", unit="user")
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
    left = CliRunner().invoke(app, ["export", str(rundir), "--with-evaluation", "--out", str(tmp_path / "e.jsonl")])
    assert left.exit_code == 0 and "left out 1 wrongly answered" in left.output


def test_help_lists_exactly_the_accepted_units_and_formats() -> None:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:
        pass

    text = " ".join(CliRunner().invoke(app, ["export", "--help"], env={"COLUMNS": "200"}).output.split())
    for value in (*UNITS, *FORMATS):
        assert value in text
    assert "per user" not in text and "user episode" not in text


# ---- the documented OpenAI chat fine-tuning rules, checked independently of the exporter -----------------

ALLOWED_ROLES = {"system", "user", "assistant", "tool"}
ALLOWED_MESSAGE_KEYS = {"role", "content", "name", "weight", "tool_calls", "tool_call_id"}


def openai_format_problems(text: str) -> list[str]:
    """Problems an OpenAI chat fine-tuning file check would report, one per offending line."""
    problems = []
    for n, raw in enumerate(text.splitlines(), start=1):
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            problems.append(f"{n}: not JSON")
            continue
        msgs = line.get("messages") if isinstance(line, dict) else None
        if not isinstance(msgs, list) or not msgs:
            problems.append(f"{n}: no messages list")
            continue
        for m in msgs:
            if not isinstance(m, dict) or m.get("role") not in ALLOWED_ROLES:
                problems.append(f"{n}: bad role")
            elif set(m) - ALLOWED_MESSAGE_KEYS:
                problems.append(f"{n}: unrecognised key {sorted(set(m) - ALLOWED_MESSAGE_KEYS)}")
            elif not isinstance(m.get("content"), str):
                problems.append(f"{n}: content is not text")
            elif "weight" in m and (m["role"] != "assistant" or m["weight"] not in (0, 1)):
                problems.append(f"{n}: weight must be 0 or 1, and only on assistant messages")
        if not any(m.get("role") == "assistant" and m.get("weight", 1) == 1 for m in msgs if isinstance(m, dict)):
            problems.append(f"{n}: no trainable assistant message")
    return problems


def test_the_checker_catches_what_the_old_export_wrote() -> None:
    old_wrong_answer = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                                     {"role": "assistant", "content": "a", "weight": 0}]}
    assert openai_format_problems(json.dumps(old_wrong_answer)) == ["1: no trainable assistant message"]
    assert openai_format_problems(json.dumps({"messages": [{"role": "user", "content": "q", "weight": 1},
                                                           {"role": "assistant", "content": "a"}]}))


@pytest.mark.parametrize("unit", UNITS)
def test_openai_chat_export_passes_the_format_check(rundir: Path, tmp_path: Path, unit: str) -> None:
    export_run(rundir, tmp_path / "out.jsonl", with_evaluation=True, unit=unit)
    text = (tmp_path / "out.jsonl").read_text()
    assert text and openai_format_problems(text) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_load_in_hf_datasets(rundir: Path, tmp_path: Path, load_hf_json: Any, fmt: str) -> None:
    path = tmp_path / "out.jsonl"
    export_run(rundir, path, fmt=fmt, with_evaluation=True)
    ds = load_hf_json(path)
    assert ds.num_rows == len(lines(path))
    if fmt == "jsonl":
        assert set(ds.column_names) == set(JSONL_KEYS)
        assert sum(1 for r in ds if r["kind"] == "evaluation" and r["role"] == "assistant") == 6
    else:
        assert ds.column_names == ["messages"] and ds[0]["messages"][0]["role"] == "system"


def test_an_empty_assistant_turn_is_context_not_a_training_target(rundir: Path, tmp_path: Path) -> None:
    """Found by probing: turns the model left empty (kept so the conversation went on) were written as targets."""
    path = next((rundir / "users").iterdir()) / "sessions.jsonl"
    records = lines(path)
    records[0]["messages"][1]["content"] = ""
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    for unit in ("episode", "session"):
        out = tmp_path / f"sft-{unit}.jsonl"
        export_run(rundir, out, unit=unit)
        messages = [m for line in lines(out) for m in line["messages"] if m["role"] == "assistant"]
        assert all(m.get("weight") == 0 for m in messages if not m["content"])
        assert all("weight" not in m for m in messages if m["content"])
        assert (unit == "episode") == any(not m["content"] for m in messages)  # a session with no target is left out
