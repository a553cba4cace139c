"""What the CLI loads before it works: `run --help` stays light, and a run loads little before its first call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CODE = """
import sys
from amemgym.cli import app
try:
    app(["run", "--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
heavy = ("asyncio", "numpy", "h11", "matplotlib", "amemgym.config", "amemgym.run", "amemgym.agents",
         "amemgym.llm", "amemgym.report")
print("LOADED", [m for m in heavy if m in sys.modules])
"""


def test_run_help_loads_no_heavy_module() -> None:
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "--out" in res.stdout  # the help really was printed
    assert res.stdout.strip().splitlines()[-1] == "LOADED []"


START = """
import sys
from amemgym.agents.registry import resolve_agent
import amemgym.families.statetrack, amemgym.run.driver, amemgym.run.results
resolve_agent("native")
print("LOADED", [m for m in ("numpy", "amemgym.agents.rag", "amemgym.agents.awe") if m in sys.modules])
"""


def test_native_run_start_loads_no_numpy() -> None:
    # Everything a native run needs before its first model call; NumPy (about 0.1 s) comes with the report,
    # imported in the background while the run waits on the network.
    res = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "LOADED []"


FIRST_CALL = """
import os, sys
import amemgym.cli as cli
import amemgym.run.driver as driver
from amemgym.llm.client import LLMClient

driver._preload = lambda: None  # what the thread would load once the calls are out is not the start's
chat = LLMClient.chat

async def first_chat(self, *args, **kwargs):
    import amemgym.records as records
    from pydantic import BaseModel
    models = [getattr(records, name) for name in records.__all__]
    built = [m.__name__ for m in models if isinstance(m, type) and issubclass(m, BaseModel) and m.__pydantic_complete__]
    heavy = ("rich", "yaml", "tenacity", "numpy", "amemgym.report", "amemgym.validity", "amemgym.agents.rag",
             "amemgym.agents.awe")
    print("LOADED", [m for m in heavy if m in sys.modules], "BUILT", built, flush=True)
    os._exit(0)

LLMClient.chat = first_chat
sys.argv = ["amemgym", *sys.argv[1:]]
cli.main()
"""


def test_native_run_loads_little_before_its_first_call(original_env_path: Path, tmp_path: Path) -> None:
    # A whole `amemgym run` up to its first model call: rich (console, tables, progress), PyYAML (a --set value
    # that is a plain name or URL), tenacity, NumPy, the report and the validity suite all load later, in a
    # thread once the calls are out; the run-file validators are built then too (pydantic's deferred build).
    from amemgym.testing.fake_endpoint import FakeEndpoint

    with FakeEndpoint() as ep:
        env = {**os.environ, "AMEMGYM_CACHE_DIR": str(tmp_path / "cache")}
        res = subprocess.run([sys.executable, "-c", FIRST_CALL, "run", "--env", str(original_env_path),
                              "--out", str(tmp_path / "run"),
                              "--set", f"llm.default.base_url={ep.base_url}", "--set", "llm.default.model=fake-model"],
                             capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "LOADED [] BUILT []"


@pytest.mark.parametrize("args", [["run", "--help"], ["run"], ["run", "--out", "x", "--bogus"], ["version"],
                                  ["generate", "--help"], ["audit-sim", "--help"], ["leaderboard", "--help"]])
def test_one_command_app_parses_and_prints_as_the_whole_app(args: list[str]) -> None:
    # `main` builds only the named command (typer converting all of them costs ~30 ms per invocation).
    from typer.testing import CliRunner

    from amemgym.cli import app, app_for

    assert app_for(args) is not app
    whole, one = CliRunner().invoke(app, args), CliRunner().invoke(app_for(args), args)
    assert (one.exit_code, one.output) == (whole.exit_code, whole.output)


def test_command_line_without_a_command_name_gets_the_whole_app() -> None:
    from amemgym.cli import app, app_for

    assert app_for([]) is app and app_for(["--help"]) is app and app_for(["no-such-command"]) is app
