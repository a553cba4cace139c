"""Every protection of bench/PROTECTIONS.md fails its guarding test when removed (bench/protections/run_all.sh).

The script runs each guarding test in its own pytest process with one protection monkeypatched away; it exits
non-zero when a guarded test passes anyway, so a protection whose test went soft fails CI here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "protections" / "run_all.sh"


def run_all(*cases: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT), *cases], capture_output=True, text=True, env=env, timeout=1800)


def test_every_protection_fails_its_test_when_removed() -> None:
    result = run_all()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "every protection is guarded" in result.stdout


def test_the_script_fails_when_a_guarded_test_passes_without_its_protection() -> None:
    # break_stream guards the file reader; the folder test does not depend on it, so it passes: not guarded.
    unguarded = "break_stream tests/test_small_hardening.py::test_a_dangling_data_json_in_an_env_folder_is_an_error"
    result = run_all(unguarded, "break_stream tests/test_no_such_file.py::test_missing")
    assert result.returncode == 1, result.stdout
    assert "2 protection(s) not guarded" in result.stdout
