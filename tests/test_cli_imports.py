"""`amemgym run --help` stays light: the event loop, numpy, HTTP client, config models and plotting load lazily."""

from __future__ import annotations

import subprocess
import sys

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
