"""``--judge-model`` on the statetrack commands is honoured where a judge is called and refused where none is.

A flag that is recorded but changes nothing reads as if a judge had scored the run; ``run`` never calls one
(multiple-choice answers are scored exactly) and ``evolve --no-recall`` calls none unless the judge role
rewrites the policy.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.testing import FakeEndpoint, default_responder


def test_run_refuses_a_judge_model_before_any_work(tmp_path: Path) -> None:
    # No endpoint is configured: the refusal comes before any model is probed.
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--judge-model", "j", "--trials", "2"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--judge-model: amemgym run calls no judge" in lines[0], result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("args", "why"), [
    (["--off-policy", "somewhere"], "--off-policy replays recorded conversations"),
    (["--env", "BUDGET"], "its events come from the episode file"),
])
def test_run_refuses_a_user_model_where_no_user_is_simulated(args: list[str], why: str, tmp_path: Path) -> None:
    # The same reason as for the judge: a recorded flag that changed nothing reads as if it had.
    if "BUDGET" in args:
        save_episode(build_episode("lite", "films", 0), tmp_path / "episode.json")
        args = ["--env", str(tmp_path / "episode.json")]
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--user-model", "u", *args])
    assert result.exit_code == 2, result.output
    assert "--user-model:" in result.output and why in " ".join(result.output.split()), result.output
    assert not (tmp_path / "r").exists()


def test_evolve_without_recall_refuses_a_judge_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["evolve", "--out", str(tmp_path / "e"), "--no-recall", "--judge-model", "j"])
    assert result.exit_code == 2, result.output
    assert "--judge-model: amemgym evolve calls no judge" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "e").exists()


class _Models:
    """Every model name the endpoint was asked for."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.seen.add(str(body.get("model")))
        return default_responder(body)


@pytest.mark.parametrize("extra", [[], ["--no-recall", "--evolver-role", "judge", "--feedback", "complete"]])
def test_evolve_sends_the_judge_model_to_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   extra: list[str]) -> None:
    models = _Models()
    with FakeEndpoint(responder=models, served_models=("model-m", "judge-j", "fake-model")) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        args = ["evolve", "--out", str(tmp_path / "e"), "--feedback", "none", "--model", "model-m",
                "--judge-model", "judge-j", "--limit", "1", "--no-cache", *extra]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "judge-j" in models.seen
