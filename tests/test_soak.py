"""The fault-and-kill soak of bench/soak.py, at its smallest size, runs with the suite (and so in CI).

One faulty run is SIGKILLed and resumed against the fake endpoint, then every hostile case runs (concurrent
writers, a key echoed on the error and the success path, empty replies); the script exits 1 on any metric
mismatch, damaged or leftover file, leaked key or hostile case accepted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parents[1] / "bench" / "soak.py"


def test_one_faulty_killed_run_and_every_hostile_case_end_clean() -> None:
    result = subprocess.run([sys.executable, str(SOAK), "--runs", "1", "--fault-rate", "0.2", "--seed", "3"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=1200)
    report = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert "metrics mismatches: 0" in result.stdout, report
    assert "files damaged: 0" in result.stdout, report
    hostile = [line for line in result.stdout.splitlines() if line.startswith("hostile ")]
    assert len(hostile) >= 4 and all(line.endswith(": 0") for line in hostile), report
