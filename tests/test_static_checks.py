"""ruff and mypy run as part of the suite, so CI enforces them with the same command as the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    found = str(exe) if exe.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


def test_ruff_is_clean() -> None:
    proc = subprocess.run([_tool("ruff"), "check", "src", "tests", "bench", "examples"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = subprocess.run([_tool("mypy"), "src/amemgym"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
