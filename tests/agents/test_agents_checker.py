"""The conformance checker passes every built-in agent and catches broken ones; the CLI command reports it."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.agents.checker import check_agent
from amemgym.agents.native import NativeAgent
from amemgym.commands.check_agent import register

BUILTINS = ["native", "rag-2-4-30", "awe-2-4-30", "awi", "awi-oracle"]


class MutatingAnswerAgent(NativeAgent):
    """Broken on purpose: evaluation leaves a trace in the history."""

    async def answer(self, prompt: str) -> str:
        self.history.append({"role": "user", "content": prompt})
        return await super().answer(prompt)


class SharedStateAgent(NativeAgent):
    """Broken on purpose: every instance shares one history list."""

    shared: list[dict[str, str]] = []

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.history = SharedStateAgent.shared


def mutating(llm, ctx):  # noqa: ANN001, ANN201 - plug-in factories are plain callables
    return MutatingAnswerAgent(llm, ctx)


def sharing(llm, ctx):  # noqa: ANN001, ANN201
    return SharedStateAgent(llm, ctx)


@pytest.mark.parametrize("name", BUILTINS)
async def test_builtin_agents_pass(name: str) -> None:
    report = await check_agent(resolve_agent(name))
    assert report.passed, report.lines()


async def test_agent_whose_answer_mutates_state_fails() -> None:
    report = await check_agent(resolve_agent("test_agents_checker:mutating"))
    failed = {r.name for r in report.results if not r.passed}
    assert "answer_is_pure" in failed


async def test_agents_sharing_state_fail_isolation() -> None:
    report = await check_agent(resolve_agent("test_agents_checker:sharing"))
    assert not next(r for r in report.results if r.name == "isolation").passed


def test_check_agent_command_exit_codes() -> None:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps typer in multi-command mode
        pass

    runner = CliRunner()
    ok = runner.invoke(app, ["check-agent", "awi"])
    assert ok.exit_code == 0 and "scripted fake LLM" in ok.output
    bad = runner.invoke(app, ["check-agent", "test_agents_checker:mutating"])
    assert bad.exit_code == 1 and "FAIL  answer_is_pure" in bad.output
    unknown = runner.invoke(app, ["check-agent", "no-such-agent"])
    assert unknown.exit_code == 2
