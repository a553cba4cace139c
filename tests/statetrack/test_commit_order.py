"""A kill between a session's record and the checkpoint past it redoes exactly that session, nothing else.

The episode hands the session line and then the checkpoint to the engine's writer. A child process runs the
fixture's episode and dies (``os._exit``, no cleanup) inside the write of the checkpoint after its second
session: the line of that session is on disk, the checkpoint still points at it. The resumed run must play
that one session again (its line appears twice, the last one winning), keep every other line once, and end
with the same conversation, trace and scores as a run that was never killed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_reliability import run_in_process as _run

from amemgym.testing.fake_endpoint import FakeEndpoint

SRC = Path(__file__).resolve().parents[2] / "src"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
USER = Path("users/u-0001")


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(seed=3) as ep:
        yield ep


def _sessions(rundir: Path) -> list[tuple[int, int]]:
    lines = (rundir / USER / "sessions.jsonl").read_text().splitlines()
    return [(r["period"], r["session"]) for r in map(json.loads, lines)]


def _messages(rundir: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (rundir / USER / "trace.jsonl").read_text().splitlines()]
    return [x for x in lines if x["kind"] == "message"]


def test_a_kill_between_a_session_line_and_its_checkpoint_redoes_exactly_that_session(
        endpoint: FakeEndpoint, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    want = asyncio.run(_run(endpoint, reference, tmp_path / "cache-ref"))
    out, cache = tmp_path / "run", tmp_path / "cache"
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(SRC)!r})
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import amemgym.engine.unit_writer as uw
        from test_commit_order import _run

        real, seen = uw.atomic_write_json, []

        def dying(path, obj, **kw):
            if str(path).endswith("state.json") and kw.get("compact"):  # a checkpoint after a session
                seen.append(path)
                if len(seen) == 2:
                    os._exit(9)
            real(path, obj, **kw)

        uw.atomic_write_json = dying

        class Ep:
            base_url = {endpoint.base_url!r}

        asyncio.run(_run(Ep(), __import__("pathlib").Path({str(out)!r}), __import__("pathlib").Path({str(cache)!r})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stdout + done.stderr
    killed_at = _sessions(out)
    assert killed_at == [(0, 0), (0, 1)]  # the second session's line landed
    state = json.loads((out / USER / "state.json").read_text())
    assert (state["period"], state["session"]) == (0, 1)  # and the checkpoint still points at it

    got = asyncio.run(_run(endpoint, out, cache))
    counts = Counter(_sessions(out))
    assert [k for k, n in counts.items() if n > 1] == [(0, 1)] and counts[(0, 1)] == 2
    assert sorted(counts) == sorted(set(_sessions(reference)))
    assert _messages(out) == _messages(reference)
    keys = ("overall", "per_period", "per_user", "complete", "missing", "answers")
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}
