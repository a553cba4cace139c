"""The engine's unit writer: how could it lose a record or land a checkpoint before the record it points past?

Each test attacks one way: a kill between the session line and the checkpoint (in a child process that
dies inside the checkpoint write), a write that fails (nothing queued after it may land), a flush racing
writes queued after it, names that climb out of the unit's folder, and a direct write while others wait.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amemgym.engine.unit_writer import UnitWriter, check_name
from amemgym.errors import RunError

SRC = Path(__file__).parents[2] / "src"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_a_kill_inside_the_checkpoint_write_keeps_the_line_and_the_old_checkpoint(tmp_path: Path) -> None:
    # The child queues session 1's line and the checkpoint past it, and dies (no cleanup) the moment the
    # checkpoint's temp file is being written: the resume point must still be session 1, whose line is there
    # and is redone (the reader's last-record-wins then drops the first copy).
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(SRC)!r})
        import amemgym.engine.unit_writer as uw
        from amemgym.storage import atomic_write_json as real

        async def main():
            w = uw.UnitWriter({str(tmp_path)!r}, "users/a")
            w.append("sessions.jsonl", [{{"session": 0}}])
            w.put("state.json", {{"session": 1}})
            await w.flush()

            def dying(path, obj, **kw):
                os._exit(9)
            uw.atomic_write_json = dying
            w.append("sessions.jsonl", [{{"session": 1}}])
            w.put("state.json", {{"session": 2}})
            await w.flush()

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 9, done.stderr
    unit = tmp_path / "users" / "a"
    assert _lines(unit / "sessions.jsonl") == [{"session": 0}, {"session": 1}]
    assert json.loads((unit / "state.json").read_text()) == {"session": 1}


async def test_a_failed_write_stops_everything_queued_after_it(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, "u")
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "sessions.jsonl").mkdir()  # appending to a folder fails
    w.put("first.json", {"n": 1})
    w.append("sessions.jsonl", [{"session": 0}])
    w.put("state.json", {"session": 1})
    w.put_journal("state.jsonl", {"session": 1})
    with pytest.raises(OSError):
        await w.flush()
    assert json.loads((tmp_path / "u" / "first.json").read_text()) == {"n": 1}
    assert not (tmp_path / "u" / "state.json").exists()  # never a checkpoint past a record that did not land
    assert not (tmp_path / "u" / "state.jsonl").exists()  # the journal's save waits in the same queue
    w.put("later.json", {"n": 2})
    with pytest.raises(OSError):
        await w.flush()  # the error stays: a later flush cannot pretend the queue is whole
    assert not (tmp_path / "u" / "later.json").exists()


async def test_writes_land_in_queue_order_and_flush_waits_only_for_earlier_ones(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, "u")
    seen: list[int] = []
    for i in range(50):
        w.append("log.jsonl", [{"i": i}])
        w.put("state.json", {"next": i + 1}, compact=i % 2 == 0)
        if i % 7 == 0:
            seen.append(i)
            await w.flush()
            assert _lines(tmp_path / "u" / "log.jsonl")[-1] == {"i": i}
            assert json.loads((tmp_path / "u" / "state.json").read_text()) == {"next": i + 1}
    await w.flush()
    assert [r["i"] for r in _lines(tmp_path / "u" / "log.jsonl")] == list(range(50))
    assert (tmp_path / "u" / "state.json").read_text() == '{\n  "next": 50\n}\n'  # the last put, pretty


async def test_concurrent_flushes_each_see_their_writes(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, ".")

    async def writer(k: int) -> None:
        for i in range(10):
            w.append(f"s{k}.jsonl", [{"i": i}])
            await w.flush()
            assert len(_lines(tmp_path / f"s{k}.jsonl")) == i + 1
            await asyncio.sleep(0)

    await asyncio.gather(*(writer(k) for k in range(4)))


@pytest.mark.parametrize("name", ["", "../x.json", "a/../../x", "/etc/passwd", "a//b", "./a", "a\\b", "a/."])
def test_names_that_leave_the_unit_folder_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(RunError):
        check_name(name)
    with pytest.raises(RunError):
        UnitWriter(tmp_path, "u").path(name)
    if name:
        with pytest.raises(RunError):
            UnitWriter(tmp_path, name)


def test_plain_names_and_subfolders_are_accepted(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, "users/a~1f")
    assert w.path("snapshots/period_00.json") == tmp_path / "users" / "a~1f" / "snapshots" / "period_00.json"
    assert UnitWriter(tmp_path).path("x.json") == tmp_path / "x.json"


async def test_a_direct_write_refuses_to_overtake_queued_ones(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, "u")
    w.append("sessions.jsonl", [{"session": 0}])
    with pytest.raises(RunError, match="flush first"):
        w.put_now("state.json", {"session": 1})
    await w.flush()
    w.put_now("state.json", {"session": 1})
    assert json.loads((tmp_path / "u" / "state.json").read_text()) == {"session": 1}


async def test_a_cancelled_drain_writes_nothing_more(tmp_path: Path) -> None:
    w = UnitWriter(tmp_path, "u")
    w.put("a.json", {"n": 1})
    assert w._drainer is not None
    w._drainer.cancel()
    w.put("b.json", {"n": 2})
    with pytest.raises(RunError):
        await w.flush()
    await asyncio.sleep(0.05)
    assert not (tmp_path / "u" / "b.json").exists()
