"""The run-directory lock: one writer per directory, and no writer inside or around a directory being written."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.engine.lock import run_lock
from amemgym.errors import RunError
from amemgym.runfiles import LOCK

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def hold() -> Iterator[object]:
    """Start another process that holds ``run_lock(path)`` until the test ends; yields a starter."""
    procs: list[subprocess.Popen[str]] = []

    def start(path: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {str(SRC)!r})
            from pathlib import Path
            from amemgym.engine.lock import run_lock
            with run_lock(Path({str(path)!r}), "amemgym holder"):
                print("locked", flush=True)
                time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_directory_inside_a_held_one_is_refused_and_not_created(tmp_path: Path, hold) -> None:
    holder = hold(tmp_path / "O")  # type: ignore[operator]
    with pytest.raises(RunError, match=rf"inside .*O, which is in use by pid {holder.pid} \(amemgym holder"):
        with run_lock(tmp_path / "O" / "s2" / "deeper", "second"):
            pass
    assert not (tmp_path / "O" / "s2").exists()


def test_a_directory_around_a_held_one_is_refused(tmp_path: Path, hold) -> None:
    holder = hold(tmp_path / "O" / "s2")  # type: ignore[operator]
    with pytest.raises(RunError, match=rf"holds .*s2, which is in use by pid {holder.pid}"):
        with run_lock(tmp_path / "O", "second"):
            pass
    assert not (tmp_path / "O" / LOCK).exists()  # the refused writer's lock file went with its refusal


def test_finished_nested_runs_and_one_process_nesting_its_own_locks_are_fine(tmp_path: Path) -> None:
    with run_lock(tmp_path / "O", "first"):
        pass  # finished: its lock file stays, unheld
    with run_lock(tmp_path / "O" / "s2", "second"), run_lock(tmp_path / "O" / "s2" / "trial_1", "trial"):
        pass  # --trials holds OUT while each trial holds OUT/trial_k
    with run_lock(tmp_path / "O", "again"):
        pass


@pytest.mark.parametrize("family", ["statetrack", "budget"])
def test_a_run_inside_a_running_run_exits_2_naming_the_holder(tmp_path: Path, hold, family: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.testing.fake_endpoint import FakeEndpoint

    args = []
    if family == "budget":
        from amemgym.families.budget.generate import build_episode
        from amemgym.families.budget.io import save_episode

        save_episode(build_episode("lite", "films", 0), tmp_path / "env" / "a" / "data.json")
        args = ["--env", str(tmp_path / "env")]
    holder = hold(tmp_path / "O")  # type: ignore[operator]
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", *args, "--out", str(tmp_path / "O" / "s2"),
                                          "--set", "llm.default.model=fake-model"])
        assert ep.calls == 0  # refused before any model call
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"in use by pid {holder.pid}" in lines[0], result.output


def test_the_lock_file_shows_the_command_line_without_keys_or_url_queries(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.redact import register_secret

    register_secret("CONFIGUREDkey0042zz")
    monkeypatch.setattr(sys, "argv", [
        "/venv/bin/amemgym", "run", "--set", "llm.default.base_url=http://h:8000/v1?token=QUERYsecret77#frag",
        "--set", "llm.default.model=CONFIGUREDkey0042zz", "--set", "llm.default.api_key=sk-proj-abcdef0123456789xyz",
        "--out", str(tmp_path / "r")])
    with run_lock(tmp_path / "r", "run"):
        shown = json.loads((tmp_path / "r" / LOCK).read_text())["argv"]
    assert shown.startswith("amemgym run --set llm.default.base_url=http://h:8000/v1?[REDACTED] ")
    for secret in ("QUERYsecret77", "frag", "CONFIGUREDkey0042zz", "abcdef0123456789xyz"):
        assert secret not in shown
    assert shown.endswith(f"--out {tmp_path / 'r'}")
