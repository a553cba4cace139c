"""The fault-and-kill soak of bench/soak.py, at its smallest size, runs with the suite (and so in CI).

For each family (statetrack, then budget) one faulty run is SIGKILLed and resumed against the fake endpoint,
then every hostile case of that family runs (concurrent writers, a key echoed on the error and the success
path, and for statetrack empty replies); the script exits 1 on any metric or record mismatch, damaged or
leftover file, budget usage that disagrees with the calls served, leaked key or hostile case accepted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parents[1] / "bench" / "soak.py"


def test_one_faulty_killed_run_per_family_and_every_hostile_case_end_clean() -> None:
    result = subprocess.run([sys.executable, str(SOAK), "--runs", "1", "--fault-rate", "0.2", "--seed", "3",
                             "--family", "both"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=1200)
    report = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    lines = result.stdout.splitlines()
    for line in ("metrics mismatches: 0", "files damaged: 0", "budget results mismatches: 0",
                 "budget usage mismatches: 0", "budget files damaged: 0"):
        assert line in lines, report
    hostile = [line for line in lines if line.startswith("hostile ")]
    assert len(hostile) >= 4 and all(line.endswith(": 0") for line in hostile), report
    budget_hostile = [line for line in lines if line.startswith("budget hostile ")]
    assert len(budget_hostile) >= 3 and all(line.endswith(": 0") for line in budget_hostile), report
