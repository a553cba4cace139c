"""What gets ranked: a run resumed on another model is flagged and unranked, and off-policy runs group by what
they replayed (issue 30, item 5)."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_budget_batch import Agent, envs  # noqa: F401 - the fixture is used by name
from test_report_runs import two_user_env
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.families import get_family
from amemgym.families.budget.units import UNITS
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm.client import LLMClient
from amemgym.report.leaderboard import leaderboard
from amemgym.report.load import load_runs
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, request_kind
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import ScriptedBackend, scripted_client
from test_trust_identity import cli


def _scripted_run(env_path: Path, out: Path, served: str, work: Path, *, users: list[str] | None = None,
                  allow_model_change: bool = False) -> None:
    env = load_environment(env_path)
    llm = scripted_client(RunScript(env.users[0]), cache=work / f"{out.name}-{served}.sqlite", embedder=False)

    async def identity() -> str:
        return served

    llm.scripted.model_identity = identity  # type: ignore[attr-defined]
    runner = Runner(env, resolve_agent("native"), out, load_config("tiny"), llm, env_path=env_path,
                    allow_model_change=allow_model_change)
    asyncio.run(runner.run(user_ids=users))


def test_a_statetrack_run_resumed_on_another_model_is_flagged_and_not_ranked(tmp_path: Path) -> None:
    env_path = two_user_env(tmp_path / "env.json")
    mixed, clean = tmp_path / "mixed", tmp_path / "clean"
    _scripted_run(env_path, mixed, "model-a", tmp_path, users=["u-0002"])  # one user of two on model-a
    _scripted_run(env_path, mixed, "model-b", tmp_path, allow_model_change=True)
    _scripted_run(env_path, clean, "model-b", tmp_path)
    entries = {e.summary.label: e for e in leaderboard(load_runs([mixed, clean]))}
    assert entries["clean"].rank == 1 and entries["clean"].flags == ()
    assert entries["mixed"].rank is None  # same perfect scores, but two models' answers
    assert any(f.startswith("model changed during the run (") and "agent model-a -> model-b" in f
               for f in entries["mixed"].flags)
    compared = CliRunner().invoke(app, ["compare", str(clean), str(mixed)])
    assert compared.exit_code == 0, compared.output
    assert "model changed during the run" in compared.output
    report = CliRunner().invoke(app, ["report", str(mixed), "--out", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output
    assert "model changed during the run" in (tmp_path / "r.html").read_text()


def _client(agent: Agent, served: str) -> LLMClient:
    backend = ScriptedBackend(agent)

    async def identity() -> str:
        return served

    backend.model_identity = identity  # type: ignore[attr-defined]
    return LLMClient(backends={"agent": backend})


def test_a_budget_run_resumed_on_another_model_is_flagged_and_not_ranked(envs, tmp_path: Path) -> None:  # noqa: F811
    env, episodes = envs
    out, log = tmp_path / "out", io.StringIO()
    agent = Agent(episodes)
    cfg = load_config("tiny")
    console = Console(file=log, width=250)
    assert run_units(UNITS, cfg, env, out, RunOptions(agent="native", serial=True, limit=1), console=console,
                     make_client=lambda c: _client(agent, "model-a")) == 0
    assert run_units(UNITS, cfg, env, out, RunOptions(agent="native", serial=True, allow_model_change=True),
                     console=console, make_client=lambda c: _client(agent, "model-b")) == 0, log.getvalue()
    board = get_family("budget").leaderboard([out])
    row = next(r for r in board.rows if "model-b" in r)  # the episodes played after the change
    assert row[1] == "-" and "model changed during the run (agent model-a -> model-b)" in row[-1]
    assert CliRunner().invoke(app, ["compare", str(out), str(out)]).exit_code == 2  # two models on a side: refused
    changed = out / "films" / "seed0"  # an episode played after the change
    compared = CliRunner().invoke(app, ["compare", str(changed), str(changed)])
    assert compared.exit_code == 0, compared.output
    assert "FLAGGED run B" in compared.output and "model changed during the run" in compared.output
    report = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output
    assert "model changed during the run" in (tmp_path / "r.html").read_text()


def test_off_policy_runs_group_by_the_conversations_they_replayed(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fast = ["--limit", "1", "--set", "llm.default.max_retries=1", "--set", "llm.default.model=fake-model"]

    def other_words(body: dict[str, Any]) -> Any:  # a second source whose conversations differ
        text = default_responder(body)
        return f"{text} Indeed." if request_kind(body) == "chat" and not text.startswith("{") else text

    for name, responder in (("src1", default_responder), ("src2", other_words)):
        with FakeEndpoint(responder=responder) as ep:
            monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
            assert cli("--out", str(tmp_path / name), *fast).exit_code == 0
    shutil.copytree(tmp_path / "src1", tmp_path / "src1_copy")
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        for name, src in (("off1", "src1"), ("off2", "src2"), ("off1b", "src1_copy")):
            result = cli("--out", str(tmp_path / name), "--off-policy", str(tmp_path / src), *fast)
            assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "off1" / "manifest.json").read_text())
    assert len(manifest["protocol"]["off_policy_sessions_sha256"]) == 64
    groups = {e.summary.label: e.group for e in leaderboard(load_runs([tmp_path / n for n in ("off1", "off2",
                                                                                               "off1b")]))}
    assert groups["off1"] == groups["off1b"] != groups["off2"]
