"""A kill between a session's record and the checkpoint past it redoes exactly that session, nothing else.

The episode hands the session line and then the checkpoint to the engine's writer. A child process runs the
fixture's episode and dies (``os._exit``, no cleanup) halfway through appending the checkpoint after its
second session to the checkpoint journal: the line of that session is on disk, the journal's last line is
torn, so the checkpoint still points at that session. The resumed run must play
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

from amemgym.engine.journal import fold
from amemgym.families.statetrack.layout import RunDir
from amemgym.storage import atomic_write_json
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


def _killed_run(endpoint: FakeEndpoint, out: Path, cache: Path) -> None:
    """Run the fixture in a child that dies halfway through appending the checkpoint after session 2."""
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(SRC)!r})
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import amemgym.engine.journal as journal
        import amemgym.families.statetrack.episode as episode
        from test_commit_order import _run

        real_save, real_append, seen = episode.save_state, journal.append_text, []

        def counting(out, period, session, snapshot):
            if session > 0:  # a checkpoint after a session (one after a period's end resumes at session 0)
                seen.append((period, session))
            real_save(out, period, session, snapshot)

        def dying(path, text):
            # The checkpoint after the second session is appended to the journal: the kill tears it midway.
            if str(path).endswith("state.jsonl") and len(seen) == 2:
                with open(path, "ab") as fh:
                    fh.write(text.encode()[: len(text) // 2])
                os._exit(9)
            real_append(path, text)

        episode.save_state, journal.append_text = counting, dying

        class Ep:
            base_url = {endpoint.base_url!r}

        asyncio.run(_run(Ep(), __import__("pathlib").Path({str(out)!r}), __import__("pathlib").Path({str(cache)!r})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stdout + done.stderr
    killed_at = _sessions(out)
    assert killed_at == [(0, 0), (0, 1)]  # the second session's line landed
    assert not (out / USER / "state.jsonl").read_text().endswith("\n")  # the checkpoint's line is torn
    state = RunDir(out).state("u-0001")
    assert state is not None and (state.period, state.session) == (0, 1)  # and the checkpoint still points at it


def _resumed_as_if_never_killed(endpoint: FakeEndpoint, out: Path, cache: Path, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    want = asyncio.run(_run(endpoint, reference, tmp_path / "cache-ref"))
    got = asyncio.run(_run(endpoint, out, cache))
    journal = [json.loads(x) for x in (reference / USER / "state.jsonl").read_text().splitlines()]
    assert "value" in journal[0] and any("changes" in x for x in journal[1:])  # checkpoints are appended
    counts = Counter(_sessions(out))
    assert [k for k, n in counts.items() if n > 1] == [(0, 1)] and counts[(0, 1)] == 2
    assert sorted(counts) == sorted(set(_sessions(reference)))
    assert _messages(out) == _messages(reference)
    keys = ("overall", "per_period", "per_user", "complete", "missing", "answers")
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}


def test_a_kill_between_a_session_line_and_its_checkpoint_redoes_exactly_that_session(
        endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    _killed_run(endpoint, out, cache)
    _resumed_as_if_never_killed(endpoint, out, cache, tmp_path)


def test_a_run_killed_under_the_whole_file_checkpoint_of_earlier_versions_resumes(
        endpoint: FakeEndpoint, tmp_path: Path) -> None:
    # Earlier versions rewrote users/<id>/state.json (one compact JSON record) after every session. Such a
    # run, killed at the same point, has state.json and no journal: the resume must start from it (redoing
    # only session 2, which a start from scratch would not) and leave the journal in its place.
    out, cache = tmp_path / "run", tmp_path / "cache"
    _killed_run(endpoint, out, cache)
    record = fold(out / USER / "state.jsonl")
    (out / USER / "state.jsonl").unlink()
    atomic_write_json(out / USER / "state.json", record, compact=True)
    _resumed_as_if_never_killed(endpoint, out, cache, tmp_path)
    assert not (out / USER / "state.json").exists()
    final = RunDir(out).state("u-0001")
    periods = len(json.loads(FIXTURE.read_text())[0]["periods"])
    assert final is not None and (final.period, final.session) == (periods, 0)
