"""Temp files of killed writers, exports of unfinished runs, and unusable files in an --env folder (issue 30,
item 7)."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

import pytest
from rich.console import Console
from test_budget_batch import Agent, envs, factory  # noqa: F401 - the fixture is used by name
from test_report_runs import two_user_env
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.errors import DataError, RunError
from amemgym.families.budget.units import UNITS
from amemgym.families.folders import episode_files
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client
from amemgym.train import export_run

STALE = (".metrics.json.ab12cd34.tmp", "users/x/.state.json.zz_9yy8x.tmp", ".write-check.q1w2e3r4")


def plant(root: Path) -> None:
    for name in STALE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("half a write")
    (root / "notes.tmp").write_text("not ours")


def scripted_run(env_path: Path, out: Path, work: Path, users: list[str] | None = None) -> None:
    env = load_environment(env_path)
    llm = scripted_client(RunScript(env.users[0]), cache=work / "cache.sqlite", embedder=False)
    asyncio.run(Runner(env, resolve_agent("native"), out, load_config("tiny"), llm, env_path=env_path)
                .run(user_ids=users))


def test_a_statetrack_resume_removes_temp_files_a_kill_left(tmp_path: Path) -> None:
    env_path = two_user_env(tmp_path / "env.json")
    out = tmp_path / "run"
    scripted_run(env_path, out, tmp_path, users=["u-0002"])
    plant(out)
    scripted_run(env_path, out, tmp_path)
    assert not [n for n in STALE if (out / n).exists()]
    assert (out / "notes.tmp").exists()  # not a name amemgym writes: left alone


def test_a_budget_resume_removes_temp_files_a_kill_left(envs, tmp_path: Path) -> None:  # noqa: F811
    env, episodes = envs
    out = tmp_path / "out"
    plant(out)
    code = run_units(UNITS, load_config("tiny"), env, out, RunOptions(agent="native", serial=True, limit=1),
                     console=Console(file=io.StringIO()), make_client=factory(Agent(episodes)))
    assert code == 0
    assert not [n for n in STALE if (out / n).exists()] and (out / "notes.tmp").exists()


def test_exporting_an_unfinished_statetrack_run_is_refused(tmp_path: Path) -> None:
    env_path = two_user_env(tmp_path / "env.json")
    out = tmp_path / "run"
    scripted_run(env_path, out, tmp_path, users=["u-0002"])  # one user of two
    with pytest.raises(RunError, match="has not finished"):
        export_run(out, tmp_path / "o.jsonl")
    result = CliRunner().invoke(app, ["export", str(out), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "has not finished" in result.output, result.output
    assert not (tmp_path / "o.jsonl").exists()
    scripted_run(env_path, out, tmp_path)
    assert export_run(out, tmp_path / "o.jsonl").lines > 0


def _folder_with(tmp_path: Path) -> Path:
    folder = tmp_path / "envs"
    for name in ("a", "b"):
        (folder / name).mkdir(parents=True)
        (folder / name / "data.json").write_text("[]")
    return folder


def test_a_fifo_in_an_env_folder_is_an_error_not_a_skip(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    (folder / "c").mkdir()
    os.mkfifo(folder / "c" / "data.json")
    with pytest.raises(DataError, match=r"c/data\.json: not a regular file"):
        episode_files(folder)
    result = CliRunner().invoke(app, ["run", "--env", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "not a regular file" in result.output, result.output


def test_a_dangling_data_json_in_an_env_folder_is_an_error(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    (folder / "c").mkdir()
    (folder / "c" / "data.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(DataError, match=r"c/data\.json: cannot read"):
        episode_files(folder)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_data_json_in_an_env_folder_is_an_error(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    (folder / "b" / "data.json").chmod(0)
    with pytest.raises(DataError, match=r"b/data\.json: cannot read"):
        episode_files(folder)
