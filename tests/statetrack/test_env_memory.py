"""Loading an environment costs memory in proportion to its valid users, not to everything the file holds.

Each case runs the loader in a fresh interpreter and reads its peak resident size (``ru_maxrss``), so
the numbers are the process's real high-water mark. Bounds are generous multiples of the file size (see
docs/tiers.md for the measured cost per user); they catch the old behaviour of building every user (and
every error) at once, which needed gigabytes for a few megabytes of broken users.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from amemgym.families.statetrack.generate.procedural import tiny_environment_path

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import resource, sys
from amemgym.families.statetrack.data import load_environment
from amemgym.errors import DataError
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    env = load_environment(sys.argv[1])
    result = f"users {len(env.users)}"
except DataError as exc:
    result = f"error {exc}"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(result)
print((peak - base) * 1024)
"""


def growth(path: Path) -> tuple[str, int]:
    """(outcome line, bytes the peak RSS grew by while loading) for a load in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr
    outcome, grown = proc.stdout.strip().splitlines()
    return outcome, int(grown)


def write_users(path: Path, n: int, *, break_first: bool = False) -> None:
    base = json.loads(tiny_environment_path().read_text(encoding="utf-8"))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(n):
            user = dict(base[i % len(base)])
            user["id"] = f"user-{i:06d}"
            if break_first and i == 0:
                user["periods"] = "not a list"
            fh.write(("," if i else "") + json.dumps(user))
        fh.write("]")


def test_a_million_empty_users_fail_fast_in_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[" + ",".join(["{}"] * 1_000_000) + "]", encoding="utf-8")
    outcome, grown = growth(path)
    assert outcome.startswith("error empty.json: [0].id: required field is missing")
    # Old loader: 7.4 GB (every user validated, every error kept). Now: one user's worth past the 3 MB text.
    assert grown < 64 * 2**20, grown


def test_a_broken_first_user_stops_before_the_others_are_built(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    write_users(path, 1500, break_first=True)
    outcome, grown = growth(path)
    assert outcome.startswith("error broken.json: [0].periods")
    assert grown < 2 * path.stat().st_size, (grown, path.stat().st_size)


def test_a_large_environment_stays_within_its_stated_memory(tmp_path: Path) -> None:
    path = tmp_path / "large.json"
    write_users(path, 1500)
    outcome, grown = growth(path)
    assert outcome == "users 1500"
    # docs/tiers.md states about 6x the file size (the text while loading, plus the typed users).
    assert grown < 8 * path.stat().st_size, (grown, path.stat().st_size)
