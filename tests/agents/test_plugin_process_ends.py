"""Plug-ins that end, hang or outlive their process: a run fails in one line and resumes; it never exits 0 with
work missing, never waits forever on a factory, and ends even when a plug-in leaves a thread running.

Each run is a child ``amemgym run`` (an ``os._exit`` must not take the test process with it), against the fake
endpoint, with short limits set as settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amemgym.testing.fake_endpoint import FakeEndpoint
from notes_plugin import NOTES_METHODS

PLUGIN = """
import json, os, sys, threading, time

MODE = os.environ.get("PLUG_MODE", "good")
if MODE == "hang_import":
    time.sleep(10**6)

class Agent:
    def __init__(self):
        self.notes = []
    async def reply(self, message, *, time=None):
        if MODE == "exit_reply":
            os._exit(0)
        if MODE == "sys_exit_reply":
            sys.exit(0)
        if MODE == "hang_reply":
            __import__("time").sleep(10**6)
        self.notes.append(message)
        return "noted"
""" + NOTES_METHODS.lstrip("\n") + """
def misbehave():
    if MODE == "exit_factory":
        os._exit(0)
    if MODE == "hang_factory":
        time.sleep(10**6)
    if MODE == "loop_factory":
        while True:
            pass
    if MODE == "thread":
        threading.Thread(target=time.sleep, args=(10**6,), name="plugin-forever").start()

def make(llm, ctx):
    misbehave()
    return Agent()

make.roles = ("agent",)

class Quiet:
    async def act(self, messages, *, event):
        return '{"tool": "done", "args": {}}'

def make_tool(llm, ctx):
    misbehave()
    return Quiet()
"""

#: How long a child run may take before the test calls it hung (the runs here take a few seconds).
RUN_SECONDS = 60

#: The two ways users are played: worker processes, and one process with one call at a time.
WAYS = {"workers": ["--set", "run.workers=2"], "serial": ["--serial"]}


@pytest.fixture
def plugin(tmp_path: Path) -> str:
    path = tmp_path / "plug_ends.py"
    path.write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    return f"{path}:make"


def _amemgym(mode: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLUG_MODE": mode, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        return subprocess.run([sys.executable, "-m", "amemgym", *args], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"amemgym {' '.join(args)} ({mode}) still running after {RUN_SECONDS} s")


def _run(mode: str, plugin: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _amemgym(mode, "run", "--agent", plugin, "--out", str(out), *extra, cwd=out.parent)


def _complete(out: Path) -> bool:
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return metrics["complete"] is True and not metrics["failures"] and len(metrics["per_user"]) == 2


@pytest.mark.parametrize("way", sorted(WAYS))
@pytest.mark.parametrize("mode", ["exit_factory", "exit_reply"])
def test_a_plugin_that_ends_its_process_fails_the_run_which_then_resumes(
        mode: str, way: str, plugin: str, endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "r"
    ended = _run(mode, plugin, out, *WAYS[way])
    text = " ".join((ended.stdout + ended.stderr).split())
    # Before: exit 0 and no error, with the users' work missing.
    assert ended.returncode != 0, text
    assert "ended its process (exit code 0)" in text and "plug_ends.py:make" in text, text
    resumed = _run("good", plugin, out, *WAYS[way])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _complete(out)


def test_sys_exit_in_a_method_is_a_recorded_failure(plugin: str, endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "r"
    ended = _run("sys_exit_reply", plugin, out, "--serial")
    assert ended.returncode == 1, ended.stdout + ended.stderr
    failures = json.loads((out / "failures.json").read_text(encoding="utf-8"))["failures"]
    assert failures and all("reply called sys.exit(0)" in f["error"] for f in failures)


@pytest.mark.parametrize("mode", ["hang_factory", "loop_factory", "hang_import"])
def test_a_factory_that_never_returns_fails_the_run_in_one_line(mode: str, plugin: str, endpoint: FakeEndpoint,
                                                                tmp_path: Path) -> None:
    # Before: the run waited forever and printed nothing.
    ended = _run(mode, plugin, tmp_path / "r", "--set", "run.agent_factory_timeout=1")
    text = " ".join((ended.stdout + ended.stderr).split())
    assert ended.returncode in (1, 2), text
    assert "plug_ends.py:make" in text and "within 1 s (run.agent_factory_timeout)" in text, text


@pytest.mark.parametrize("way", sorted(WAYS))
def test_a_thread_a_plugin_leaves_running_does_not_keep_the_run_alive(way: str, plugin: str, endpoint: FakeEndpoint,
                                                                       tmp_path: Path) -> None:
    # Before: the run printed its results, then never exited.
    out = tmp_path / "r"
    done = _run("thread", plugin, out, *WAYS[way])
    assert done.returncode == 0, done.stdout + done.stderr
    assert _complete(out)


def test_check_agent_holds_each_call_to_a_time_limit(plugin: str, tmp_path: Path) -> None:
    # Before: check-agent waited on the hung reply for the run's default limit (15 minutes).
    done = _amemgym("hang_reply", "check-agent", plugin, "--set", "run.agent_call_timeout=1", cwd=tmp_path)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1, text
    assert "reply gave no reply within 1 s (run.agent_call_timeout)" in text, text


@pytest.mark.parametrize("mode", ["exit_factory", "hang_factory"])
def test_a_budget_plugin_factory_that_ends_or_hangs_is_refused_before_any_work(mode: str, plugin: str,
                                                                                endpoint: FakeEndpoint,
                                                                                tmp_path: Path) -> None:
    # Before: the budget family built the plug-in in the run's own process, so an os._exit in its factory ended
    # the run with exit 0 and nothing written, and a factory that never returned hung the run.
    from amemgym.families.budget.generate import build_episode
    from amemgym.families.budget.io import save_episode

    env = tmp_path / "episode.json"
    save_episode(build_episode("lite", "films", 0), env)
    out = tmp_path / "r"
    ended = _amemgym(mode, "run", "--env", str(env), "--agent", f"{plugin}_tool", "--out", str(out),
                     "--set", "run.agent_factory_timeout=1", cwd=tmp_path)
    text = " ".join((ended.stdout + ended.stderr).split())
    assert ended.returncode == 1 and "plug_ends.py:make_tool" in text, text
    assert ("ended its process (exit code 0)" if mode == "exit_factory" else "within 1 s") in text, text
    assert not out.exists()
