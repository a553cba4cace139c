"""Plug-in agents at the edges (found by probing with hostile plug-ins): evolve guards them as run does, a
file plug-in plays in worker processes with the run's call limit, a snapshot that is not JSON and an async
restore are one recorded failure, and options or names an agent cannot take are refused."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.agents.guard import _check_type, call_plugin_sync
from amemgym.agents.registry import resolve_agent
from amemgym.cli import app
from amemgym.errors import AgentError, ConfigError
from amemgym.evolve.loop import evolving_spec
from amemgym.families.statetrack.compat.flags import output_dir
from amemgym.testing.fake_endpoint import FakeEndpoint
from notes_plugin import NOTES_METHODS

PLUGIN = """
import json, time

class Agent:
    def __init__(self):
        self.notes = []
    async def reply(self, message, *, time=None):
        if MODE == "busy":
            while True:
                pass
        self.notes.append(message)
        return "noted"
""" + NOTES_METHODS.lstrip("\n") + """
MODE = "good"

def make(llm, ctx):
    return Agent()

make.roles = ("agent",)
"""



def _plugin(tmp_path: Path, mode: str) -> str:
    path = tmp_path / f"plug_{mode}.py"
    path.write_text(textwrap.dedent(PLUGIN).replace('MODE = "good"', f'MODE = "{mode}"'), encoding="utf-8")
    return f"{path}:make"


def test_a_file_plugin_plays_in_worker_processes(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    # The factory is pickled by the module name the driver imported the file under; workers import it too.
    res = CliRunner().invoke(app, ["run", "--agent", _plugin(tmp_path, "good"), "--out", str(tmp_path / "r"),
                                   "--set", "run.workers=2"])
    assert res.exit_code == 0, res.output
    failures = tmp_path / "r" / "failures.json"
    assert not failures.exists() or json.loads(failures.read_text())["failures"] == []
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert len(manifest["users"]) == 2


def test_workers_hold_plugin_calls_to_the_runs_limit(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--agent", _plugin(tmp_path, "busy"), "--out", str(tmp_path / "r"),
                                   "--set", "run.workers=2", "--set", "run.agent_call_timeout=2"])
    assert res.exit_code == 1, res.output
    failures = json.loads((tmp_path / "r" / "failures.json").read_text())["failures"]
    assert failures and all("within 2 s" in f["error"] for f in failures), failures


def test_evolve_keeps_a_plugins_guard() -> None:
    spec = resolve_agent("awi")
    guarded = evolving_spec(type(spec)(spec.name, spec.factory, {}, {}, ("agent",), plugin=True), "complete", {})
    assert guarded.plugin and guarded.roles == ("agent",) and guarded.name == "awi+evolve(complete)"


@pytest.mark.parametrize(("value", "where"), [
    ({"s": {1, 2}}, "a set at snapshot['s']"),
    ({"b": [b"x"]}, "a bytes at snapshot['b'][0]"),
    ({"k": {3: "three"}}, "a int key 3 at snapshot['k']"),
    ({"o": object()}, "a object at snapshot['o']"),
])
def test_a_snapshot_that_is_not_json_is_one_failure(value: dict[str, Any], where: str) -> None:
    with pytest.raises(AgentError, match=f"snapshot returned {where.replace('[', '.').replace(']', '.')}"):
        _check_type("p", "snapshot", value, dict)
    assert _check_type("p", "snapshot", {"a": [1, 2.5, None, True, "x"]}, dict) == {"a": [1, 2.5, None, True, "x"]}


def test_a_runaway_reply_is_one_failure_not_a_full_disk() -> None:
    from amemgym.agents.guard import MAX_TEXT_CHARS

    with pytest.raises(AgentError, match=r"answer returned 1,000,001 characters; at most 1,000,000"):
        _check_type("p", "answer", "x" * (MAX_TEXT_CHARS + 1), str)
    assert _check_type("p", "answer", "x" * MAX_TEXT_CHARS, str) == "x" * MAX_TEXT_CHARS


def test_an_async_restore_is_refused_not_skipped() -> None:
    async def restore(snapshot: Any) -> None:
        pass

    with pytest.raises(AgentError, match="restore is async"):
        call_plugin_sync("p", "restore", restore, {})


def test_options_a_plugin_cannot_take_and_bad_mem0_knobs_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({"type": _plugin(tmp_path, "good"), "options": {"topk": 5}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="takes none"):
        resolve_agent(str(config))
    with pytest.raises(ConfigError, match="topk"):
        resolve_agent("mem0-0")


@pytest.mark.parametrize("name", ["../victim", "/tmp/elsewhere", "..", "a/b", ""])
def test_an_original_agent_name_must_stay_inside_the_output_folder(name: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("x")
    args = argparse.Namespace(output_dir=str(tmp_path / "out"), reset=True)
    with pytest.raises(ConfigError, match="one folder name"):
        output_dir(args, name)
    assert (victim / "keep.txt").exists()
    assert output_dir(args, "agent") == tmp_path / "out" / "agent"


def test_evolve_resumes_a_last_cycle_that_did_not_finish(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    import asyncio

    from amemgym.evolve.loop import evolution_record_path
    from amemgym.families.statetrack.layout import RunDir, read_state, save_state

    out = tmp_path / "evo"
    args = ["evolve", "--out", str(out), "--agent", "awi", "--feedback", "none", "--no-recall", "--limit", "1"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    rd = RunDir(out)
    uid = json.loads((out / "manifest.json").read_text())["users"][0]
    state = rd.state(uid)
    assert state is not None and not state.hook_pending
    last = state.period - 1
    # As a kill inside the last period's cycle leaves it: the checkpoint past the period, the cycle owed.
    record = evolution_record_path(rd, uid, last)
    kept = json.loads(record.read_text())
    record.unlink()
    writer = rd.writer(uid)

    async def owe() -> None:
        save_state(writer, state.period, 0, state.snapshot, hook_pending=True)
        await writer.flush()

    asyncio.run(owe())
    assert read_state(writer).hook_pending  # type: ignore[union-attr]
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads(record.read_text())["period"] == kept["period"] == last
    assert not rd.state(uid).hook_pending  # type: ignore[union-attr]


def test_a_plugin_raising_cancelled_or_a_base_exception_is_one_failure(tmp_path: Path) -> None:
    import asyncio

    from amemgym.agents.base import AgentContext
    from amemgym.agents.guard import call_plugin
    from amemgym.errors import AMemGymError

    async def reply() -> str:
        raise asyncio.CancelledError  # the plug-in's own, not a cancellation of the run

    with pytest.raises(AgentError, match="reply"):
        asyncio.run(call_plugin("p", "reply", reply))
    path = tmp_path / "base.py"
    path.write_text("class Odd(BaseException):\n    pass\n\ndef make(llm, ctx):\n    raise Odd('no')\n",
                    encoding="utf-8")
    with pytest.raises(AMemGymError, match="factory"):
        resolve_agent(f"{path}:make").build(None, AgentContext(user_id="u"))  # type: ignore[arg-type]


def test_what_a_plugin_prints_stays_off_the_json_summary(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    path = tmp_path / "loud.py"
    loud = textwrap.dedent(PLUGIN).replace("        self.notes.append(message)\n",
                                           "        self.notes.append(message)\n        print('chatty')\n")
    # Its import and factory talk too, at the file descriptor as well: they first run in a check's child.
    loud = loud.replace("def make(llm, ctx):\n", "print('loud import')\n\ndef make(llm, ctx):\n"
                        "    print('factory talk'); __import__('os').write(1, b'raw fd talk\\n')\n")
    path.write_text(loud, encoding="utf-8")
    # A plug-in plays in a worker process, whose output is the command's file descriptors: a child command.
    import os
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "amemgym", "run", "--agent", f"{path}:make", "--out",
                          str(tmp_path / "r"), "--limit", "1", "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["exit_code"] == 0 and "chatty" in res.stderr
    assert "factory talk" in res.stderr and "raw fd talk" in res.stderr and "loud import" in res.stderr
