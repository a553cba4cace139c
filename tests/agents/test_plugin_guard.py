"""Plug-in agents that block, exit, raise, reply with the wrong type, edit what they are handed, or read
what a player may not know: each is one line and a recorded failure (issue 30, items 1 and 2)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.agents.guard import call_plugin, set_call_limit
from amemgym.cli import app
from amemgym.engine.checkpoint import read_trace
from amemgym.errors import AgentError
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.testing.fake_endpoint import FakeEndpoint

FAST = ["--set", "llm.default.max_retries=1", "--set", "llm.default.model=fake-model"]


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 0)


@pytest.fixture(autouse=True)
def _restore_limit() -> Any:
    yield
    set_call_limit(None, stall=30.0)


def budget_env(episode: Episode, tmp_path: Path) -> Path:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    return env


TOOL_PLUGINS = '''
import json, os, sys, time

DONE = json.dumps({"tool": "done", "args": {}})
ANSWER = json.dumps({"tool": "submit_answer", "args": {"answer": "I don't know"}})


class Base:
    def reply_for(self, event):
        return ANSWER if event.kind == "question" else DONE


class Peeker(Base):
    """Reads the golds through the context it was given."""

    def __init__(self, ctx):
        self.golds = [q.gold for q in ctx.episode.questions]

    async def act(self, messages, *, event):
        return self.reply_for(event)


class FactPeeker(Base):
    async def act(self, messages, *, event):
        return json.dumps({"tool": "write", "args": {"text": str(event.facts)}})


class Blocker(Base):
    async def act(self, messages, *, event):
        time.sleep(3600)  # a synchronous call with no timeout, inside async def: the event loop is stuck


class Waiter(Base):
    def act(self, messages, *, event):  # a plain function: run in a thread
        time.sleep(3600)


class Exiter(Base):
    async def act(self, messages, *, event):
        sys.exit(0)


class Raiser(Base):
    async def act(self, messages, *, event):
        if os.path.exists(os.environ["AMEMGYM_TEST_FLAG"]):
            raise ValueError("the plug-in's own bug")
        return self.reply_for(event)


class WrongType(Base):
    async def act(self, messages, *, event):
        return {"tool": "done"}


class Mutator(Base):
    async def act(self, messages, *, event):
        opening = messages[-1]["content"]
        for m in messages:
            m["content"] = "rewritten by the plug-in"
        messages.append({"role": "user", "content": "extra"})
        return self.reply_for(event) if "rewritten" not in opening else DONE


def peeker(llm, ctx): return Peeker(ctx)
def fact_peeker(llm, ctx): return FactPeeker()
def blocker(llm, ctx): return Blocker()
def waiter(llm, ctx): return Waiter()
def exiter(llm, ctx): return Exiter()
def raiser(llm, ctx): return Raiser()
def wrong_type(llm, ctx): return WrongType()
def mutator(llm, ctx): return Mutator()
'''


@pytest.fixture()
def tool_plugins(tmp_path: Path) -> Path:
    path = tmp_path / "tool_plugins.py"
    path.write_text(TOOL_PLUGINS)
    return path


def run_budget(env: Path, out: Path, agent: str, *extra: str) -> Any:
    return CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out), "--agent", agent, *extra])


def failure_lines(out: Path) -> list[str]:
    return [f["error"] for f in json.loads((out / "failures.json").read_text())["failures"]]


# ---- 1. no answers through the agent's API ------------------------------------------------------------------
def test_a_tool_plugin_cannot_read_the_golds_through_its_context(episode: Episode, tmp_path: Path,
                                                                  tool_plugins: Path) -> None:
    result = run_budget(budget_env(episode, tmp_path), tmp_path / "r", f"{tool_plugins}:peeker")
    assert result.exit_code == 2, result.output
    assert "AttributeError" in result.output and "questions" in result.output
    assert not (tmp_path / "r" / "results.json").exists()


def test_a_tool_plugin_is_shown_the_event_not_its_hidden_facts(episode: Episode, tmp_path: Path,
                                                                tool_plugins: Path) -> None:
    out = tmp_path / "r"
    result = run_budget(budget_env(episode, tmp_path), out, f"{tool_plugins}:fact_peeker")
    assert result.exit_code == 1, result.output
    assert any("act raised AttributeError" in line and "facts" in line for line in failure_lines(out))


def test_the_plugin_context_holds_the_rules_only(episode: Episode) -> None:
    from amemgym.families.budget.run import plugin_context

    view = plugin_context(episode).episode
    assert view is not None and view.tier == episode.tier and view.budget == episode.tier.writes
    assert view.note_chars == episode.note_chars and "write" in view.tools
    for hidden in ("questions", "events", "changes", "entities", "entity_names", "absent_names", "reference_writes"):
        assert not hasattr(view, hidden), hidden


def test_a_statetrack_plugin_is_told_no_state_schema(tmp_path: Path) -> None:
    from amemgym.agents.base import AgentContext
    from amemgym.agents.registry import resolve_agent

    plugin = tmp_path / "seer.py"
    plugin.write_text("from amemgym.agents.native import NativeAgent\n"
                      "seen = []\n"
                      "def make(llm, ctx):\n"
                      "    seen.append(dict(ctx.state_schema))\n"
                      "    return NativeAgent(llm, ctx)\n")
    spec = resolve_agent(f"{plugin}:make")
    spec.build(None, AgentContext(user_id="u", state_schema={"city": ["Paris", "Rome"]}))  # type: ignore[arg-type]
    import sys

    module = next(m for n, m in sys.modules.items() if n.startswith("amemgym_plugin_") and n.endswith("seer"))
    assert module.seen == [{}]


def test_the_statetrack_agent_context_holds_no_state_answers_or_periods() -> None:
    from dataclasses import fields

    from amemgym.agents.base import AgentContext

    # Audit: a new field must be looked at before it reaches plug-ins (state_schema is cleared for them).
    assert {f.name for f in fields(AgentContext)} == {
        "user_id", "seed", "reply_max_tokens", "eval_max_tokens", "context_window", "state_schema",
        "system_prompt", "store_factory"}


# ---- 2. plug-ins that block, exit or misbehave, in the budget family -----------------------------------------
@pytest.mark.parametrize("factory", ["blocker", "waiter"])
def test_a_blocking_tool_plugin_becomes_a_recorded_failure(episode: Episode, tmp_path: Path, tool_plugins: Path,
                                                           factory: str) -> None:
    out = tmp_path / "r"
    t0 = time.monotonic()
    result = run_budget(budget_env(episode, tmp_path), out, f"{tool_plugins}:{factory}",
                        "--set", "run.agent_call_timeout=1")
    assert time.monotonic() - t0 < 60  # not an hour: the limit ended it
    assert result.exit_code == 1, result.output
    assert any("act gave no reply within 1 s" in line and factory in line for line in failure_lines(out))


def test_sys_exit_in_a_tool_plugin_is_a_failure_not_a_clean_exit(episode: Episode, tmp_path: Path,
                                                                tool_plugins: Path) -> None:
    out = tmp_path / "r"
    result = run_budget(budget_env(episode, tmp_path), out, f"{tool_plugins}:exiter")
    assert result.exit_code == 1, result.output
    assert any("act called sys.exit(0)" in line for line in failure_lines(out))


def test_a_raising_tool_plugin_gives_one_line_and_resumes(episode: Episode, tmp_path: Path, tool_plugins: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "fail.flag"
    flag.touch()
    monkeypatch.setenv("AMEMGYM_TEST_FLAG", str(flag))
    env, out = budget_env(episode, tmp_path), tmp_path / "r"
    broken = run_budget(env, out, f"{tool_plugins}:raiser")
    assert broken.exit_code == 1, broken.output
    assert "Traceback" not in broken.output
    assert failure_lines(out) == [f"agent '{tool_plugins}:raiser': act raised ValueError: the plug-in's own bug"]
    flag.unlink()
    fixed = run_budget(env, out, f"{tool_plugins}:raiser")
    assert fixed.exit_code == 0, fixed.output
    assert (out / "results.json").exists() and failure_lines(out) == []  # as a statetrack run: emptied, kept


def test_a_wrong_reply_type_is_one_line(episode: Episode, tmp_path: Path, tool_plugins: Path) -> None:
    out = tmp_path / "r"
    result = run_budget(budget_env(episode, tmp_path), out, f"{tool_plugins}:wrong_type")
    assert result.exit_code == 1, result.output
    assert any("act returned dict, expected str" in line for line in failure_lines(out))


def test_a_plugin_that_edits_its_messages_cannot_rewrite_the_trace(episode: Episode, tmp_path: Path,
                                                                   tool_plugins: Path) -> None:
    out = tmp_path / "r"
    result = run_budget(budget_env(episode, tmp_path), out, f"{tool_plugins}:mutator")
    assert result.exit_code == 0, result.output
    trace = read_trace(out)
    assert trace and all("rewritten" not in r["prompt"] and r["prompt"] != "extra" for r in trace)
    assert all(r["prompt"].startswith("Memory:") or "Event" in r["prompt"] for r in trace if r["step"] == 0)


# ---- 2. the same in the state-tracking family ---------------------------------------------------------------
MEMORY_PLUGINS = '''
import sys, time
from amemgym.agents.native import NativeAgent


class Blocking(NativeAgent):
    async def reply(self, message, *, time_=None, **kw):
        time.sleep(3600)


class Exiting(NativeAgent):
    async def reply(self, message, **kw):
        sys.exit(0)


class Wrong(NativeAgent):
    async def reply(self, message, **kw):
        return None


class Raising(NativeAgent):
    async def answer(self, prompt):
        raise ValueError("the plug-in's own bug")


def blocking(llm, ctx): return Blocking(llm, ctx)
def exiting(llm, ctx): return Exiting(llm, ctx)
def wrong(llm, ctx): return Wrong(llm, ctx)
def raising(llm, ctx): return Raising(llm, ctx)
'''


@pytest.mark.parametrize(("factory", "line"), [("blocking", "reply gave no reply within 1 s"),
                                               ("exiting", "reply called sys.exit(0)"),
                                               ("wrong", "reply returned NoneType, expected str"),
                                               ("raising", "answer raised ValueError: the plug-in's own bug")])
def test_a_misbehaving_statetrack_plugin_is_a_recorded_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               factory: str, line: str) -> None:
    plugin = tmp_path / "memory_plugins.py"
    plugin.write_text(MEMORY_PLUGINS)
    out = tmp_path / "run"
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", "--out", str(out), "--agent", f"{plugin}:{factory}", "--limit", "1",
                                          "--set", "run.agent_call_timeout=1", *FAST])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert any(line in f and factory in f for f in failure_lines(out))


# ---- the guard itself ---------------------------------------------------------------------------------------
def test_a_stalled_call_is_reported_before_it_fails(capfd: pytest.CaptureFixture[str]) -> None:
    class Slow:
        async def act(self) -> str:
            await asyncio.sleep(3600)
            return ""

    set_call_limit(1.0, stall=0.3)
    with pytest.raises(AgentError, match="act gave no reply within 1 s"):
        asyncio.run(call_plugin("slow", "act", Slow().act, expect=str))
    assert "agent slow: no reply from act for 0 s" in capfd.readouterr().err


@contextlib.contextmanager
def sigint_handled_by(handler: Any) -> Iterator[None]:
    """SIGINT set to ``handler`` for the body of the ``with``, then put back."""
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def interactive_ctrl_c() -> Iterator[None]:
    """Ctrl-C handled as in an interactive shell, for this test and the runs it starts.

    A process started in the background of a non-interactive shell (``cmd &`` in a script) inherits SIGINT
    ignored, and so does every process it starts: the suite must not depend on how it was launched.
    A Python handler here is reset to the default in a child, which then installs its own, as any run does.
    """
    with sigint_handled_by(signal.default_int_handler):
        yield


class Stuck:
    """A plug-in whose step blocks the event loop for an hour."""

    async def act(self) -> str:
        time.sleep(3600)
        return ""


@pytest.mark.usefixtures("interactive_ctrl_c")
def test_ctrl_c_reaches_a_plugin_that_blocks_the_loop() -> None:
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(call_plugin("stuck", "act", Stuck().act))
    assert time.monotonic() - t0 < 30
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it_inside_a_plugin() -> None:
    # As a script's background job starts: SIGINT ignored. A Ctrl-C meant for the script must not stop the
    # plug-in, while the watchdog's own interrupt of an overdue step still works.
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    with sigint_handled_by(signal.SIG_IGN):
        try:
            set_call_limit(1.0)
            timer.start()
            with pytest.raises(AgentError, match="act gave no reply within 1 s"):
                asyncio.run(call_plugin("stuck", "act", Stuck().act))
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        finally:
            timer.cancel()


# ---- Ctrl-C through the command line ------------------------------------------------------------------------
BLOCKING_ONCE = '''
import json, os, time
from amemgym.agents.native import NativeAgent

FLAG, ENTERED = os.environ["PLUGIN_TEST_FLAG"], os.environ["PLUGIN_TEST_ENTERED"]


def block_if_flagged():
    if os.path.exists(FLAG):
        open(ENTERED, "w").close()
        time.sleep(3600)  # a synchronous call with no timeout


class Memory(NativeAgent):
    async def reply(self, message, *, time):
        block_if_flagged()
        return await super().reply(message, time=time)


class Tool:
    async def act(self, messages, *, event):
        block_if_flagged()
        if event.kind == "question":
            return json.dumps({"tool": "submit_answer", "args": {"answer": "I don't know"}})
        return json.dumps({"tool": "done", "args": {}})


class SyncTool(Tool):
    def act(self, messages, *, event):  # a plain function: run in a thread
        block_if_flagged()
        return json.dumps({"tool": "submit_answer" if event.kind == "question" else "done",
                           "args": {"answer": "I don't know"} if event.kind == "question" else {}})


def memory(llm, ctx): return Memory(llm, ctx)
def tool(llm, ctx): return Tool()
def sync_tool(llm, ctx): return SyncTool()
'''


@pytest.mark.usefixtures("interactive_ctrl_c")
@pytest.mark.parametrize(("family", "factory"), [("statetrack", "memory"), ("budget", "tool"), ("budget", "sync_tool")])
def test_ctrl_c_stops_a_run_stuck_in_a_plugin_and_the_run_resumes(family: str, factory: str, episode: Episode,
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from amemgym.testing.runs import start_run

    plugin = tmp_path / "blocking_once.py"
    plugin.write_text(BLOCKING_ONCE)
    flag, entered = tmp_path / "block.flag", tmp_path / "entered"
    flag.touch()
    out = tmp_path / "run"
    if family == "statetrack":
        args = ["run", "--out", str(out), "--agent", f"{plugin}:{factory}", "--limit", "1", *FAST]
    else:
        args = ["run", "--env", str(budget_env(episode, tmp_path)), "--out", str(out), "--agent", f"{plugin}:{factory}",
                *FAST]
    monkeypatch.setenv("PLUGIN_TEST_FLAG", str(flag))
    monkeypatch.setenv("PLUGIN_TEST_ENTERED", str(entered))
    with FakeEndpoint() as ep:
        proc = start_run(ep, args, tmp_path / "cache", pythonpath=Path(__file__).parents[2] / "src")
        deadline = time.monotonic() + 120
        while not entered.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert entered.exists(), proc.communicate()[0]
        proc.send_signal(signal.SIGINT)
        try:
            output = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("Ctrl-C did not stop a run stuck in a plug-in")
        assert proc.returncode == 130, output
        assert "interrupted; re-run the same command to resume" in output and "Traceback" not in output
        flag.unlink()
        resumed = start_run(ep, args, tmp_path / "cache", pythonpath=Path(__file__).parents[2] / "src")
        output = resumed.communicate(timeout=300)[0]
        assert resumed.returncode == 0, output


def test_a_timeout_inside_the_plugin_is_its_own_error_not_the_limit() -> None:
    async def own_timeout() -> str:
        raise TimeoutError("socket timed out")

    set_call_limit(60.0)
    with pytest.raises(AgentError, match="reply raised TimeoutError: socket timed out"):
        asyncio.run(call_plugin("p", "reply", own_timeout))


def test_a_blocking_synchronous_method_fails_at_the_limit() -> None:
    from amemgym.agents.guard import call_plugin_sync

    set_call_limit(0.5)
    with pytest.raises(AgentError, match="restore gave no reply within 0.5 s"):
        call_plugin_sync("p", "restore", time.sleep, 3600)
