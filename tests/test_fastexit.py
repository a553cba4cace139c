"""Leaving the process early: exit status, atexit handlers and flushed output are kept; a live thread prevents it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import atexit, sys, threading
from pathlib import Path
from amemgym.fastexit import exit_now
atexit.register(lambda: Path(sys.argv[1]).write_text("handler ran"))
sys.stdout.write("buffered output")  # not flushed by hand
if sys.argv[2] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    exit_now(3)
    print(" and the normal exit")
    sys.exit(4)
exit_now(sys.argv[2] if sys.argv[2] == "message" else 3)
print("not reached")
"""


def run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "marker"), mode], capture_output=True,
                          text=True, timeout=60)


def test_exit_now_keeps_status_handlers_and_output(tmp_path: Path) -> None:
    res = run(tmp_path, "code")
    assert res.returncode == 3 and res.stdout == "buffered output"
    assert (tmp_path / "marker").read_text() == "handler ran"


def test_a_message_exits_1_and_is_printed(tmp_path: Path) -> None:
    res = run(tmp_path, "message")
    assert res.returncode == 1 and res.stderr.strip() == "message" and "not reached" not in res.stdout


def test_another_live_thread_means_the_normal_exit(tmp_path: Path) -> None:
    res = run(tmp_path, "thread")
    assert res.returncode == 4 and res.stdout == "buffered output and the normal exit\n"
    assert (tmp_path / "marker").read_text() == "handler ran"


def test_cli_exit_codes_are_unchanged(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "amemgym", "version"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.strip()
    bad = subprocess.run([sys.executable, "-m", "amemgym", "run", "--out", str(tmp_path / "r"), "--env",
                          str(tmp_path / "missing.json")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no such environment file" in bad.stderr
