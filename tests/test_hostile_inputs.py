"""Hostile inputs and a hostile machine end in one line (exit 2 for bad input, 1 for I/O), never a traceback.

Covers: an overlong user id, deeply nested JSON, an unusable ``--out``, a full disk, plug-ins that break at
import or in their factory (or call ``sys.exit``), malformed base URLs, ``--env`` naming a FIFO, and a
UTF-8 byte order mark (accepted).
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym import storage
from amemgym.cli import app
from amemgym.errors import DataError
from amemgym.families.statetrack.data import load_environment
from amemgym.testing.fake_endpoint import FakeEndpoint

FIXTURE = Path(__file__).parent / "fixtures" / "original_shape.json"
SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(seed=11) as ep:
        yield ep


@pytest.fixture(autouse=True)
def _env(endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.base_url)


#: What the fake endpoint's server thread prints when a client hangs up mid-request (it shares stderr with
#: the in-process CLI); it is the test server's noise, not the CLI's output.
SERVER_NOISE = re.compile(r"-{40}\nException occurred during processing of request.*?-{40}\n", re.S)


def invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    result.cli_output = SERVER_NOISE.sub("", result.output)
    assert "Traceback" not in result.cli_output
    return result


def one_line(args: list[str], code: int, *needles: str) -> str:
    result = invoke(args)
    lines = [line for line in result.cli_output.splitlines() if line.strip() and not line.startswith("sessions ")]
    errors = [line for line in lines if line.startswith("error: ")]
    assert result.exit_code == code, result.output
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def run_args(out: Path, env: Path = FIXTURE, *extra: str) -> list[str]:
    return ["run", "--env", str(env), "--out", str(out), *extra]


# ---- the file system -----------------------------------------------------------------------------------
def test_a_user_id_longer_than_a_file_name_runs(tmp_path: Path) -> None:
    raw = json.loads(FIXTURE.read_text(encoding="utf-8"))
    raw[0]["id"] = "u" * 1000
    env = tmp_path / "long.json"
    env.write_text(json.dumps(raw), encoding="utf-8")
    result = invoke(run_args(tmp_path / "run", env))
    assert result.exit_code == 0, result.output
    assert all(len(p.name) < 255 for p in (tmp_path / "run" / "users").iterdir())


def test_out_that_is_a_file(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("x", encoding="utf-8")
    one_line(run_args(out), 2, "is a file")


def test_out_that_is_a_dangling_symlink(tmp_path: Path) -> None:
    out = tmp_path / "link"
    out.symlink_to(tmp_path / "nowhere" / "deeper")
    one_line(run_args(out), 2, "symbolic link to nothing")


def test_out_that_is_not_writable(tmp_path: Path) -> None:
    # /proc refuses new entries even for root, which chmod-based checks cannot show.
    one_line(run_args(Path("/proc/amemgym-not-writable")), 2, "not writable")


def test_a_full_disk_is_a_clean_resumable_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = storage.atomic_write_bytes
    calls = {"n": 0}

    def filling(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] > 6:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(storage, "atomic_write_bytes", filling)
    line = one_line(run_args(tmp_path / "run"), 1, "ENOSPC", "re-run")
    assert "No space left" in line
    monkeypatch.setattr(storage, "atomic_write_bytes", real)
    assert invoke(run_args(tmp_path / "run")).exit_code == 0


# ---- JSON that parsers choke on ------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, '{"users": ' + "[" * 200_000 + "]" * 200_000 + "}",
                                  "[" + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "]"])
def test_deeply_nested_environment(tmp_path: Path, text: str) -> None:
    env = tmp_path / "deep.json"
    env.write_text(text, encoding="utf-8")
    one_line(run_args(tmp_path / "run", env), 2, "deep.json", "nested too deeply")


def test_deeply_nested_run_file(tmp_path: Path) -> None:
    assert invoke(run_args(tmp_path / "run")).exit_code == 0
    (tmp_path / "run" / "metrics.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    one_line(["report", str(tmp_path / "run"), "--out", str(tmp_path / "r.html")], 2, "metrics.json", "nested")


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    env = tmp_path / "bom.json"
    env.write_bytes(b"\xef\xbb\xbf" + FIXTURE.read_bytes())
    assert load_environment(env) == load_environment(FIXTURE)


def test_env_naming_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "env.fifo"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "amemgym", "run", "--env", str(fifo), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(DataError, match="not a regular file"):
        load_environment(tmp_path)


# ---- plug-ins ------------------------------------------------------------------------------------------
PLUGINS = {
    "raises_at_import": ("raise RuntimeError('plugin exploded')\n", "raised RuntimeError: plugin exploded"),
    "syntax_error": ("def broken(:\n", "syntax error"),
    "exits_at_import": ("import sys\nsys.exit(0)\n", "sys.exit(0)"),
    "factory_raises": ("def make(llm, ctx):\n    raise ValueError('no agent today')\n",
                       "factory raised ValueError: no agent today"),
    "factory_returns_junk": ("def make(llm, ctx):\n    return 42\n", "returned int, not a memory agent"),
}


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_a_broken_plugin_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    code, needle = PLUGINS[name]
    module = f"amemgym_test_plugin_{name}"
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    one_line(run_args(tmp_path / "run", FIXTURE, "--agent", f"{module}:make"), 2, needle)


# ---- endpoints -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://[::1/v1", "http://127.0.0.1:99999/v1", "http://exa mple.com/v1", "127.0.0.1"])
def test_a_malformed_base_url_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    one_line(run_args(tmp_path / "run"), 2, "OPENAI_BASE_URL", "malformed base URL")


FILLING_DISK = """
import errno, os, sys
from amemgym import storage
real = storage.atomic_write_bytes
written = [0]


def filling(path, data):
    written[0] += 1
    if written[0] > 6:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    real(path, data)


storage.atomic_write_bytes = filling
from amemgym.cli import main
sys.argv = ["amemgym", "run", "--env", sys.argv[1], "--out", sys.argv[2]]
main()
"""


def test_a_full_disk_prints_no_traceback_in_a_real_process(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    # A real process: background tasks left holding the error would be logged with a traceback at exit.
    env = {**os.environ, "PYTHONPATH": str(SRC), "OPENAI_BASE_URL": endpoint.base_url,
           "AMEMGYM_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", FILLING_DISK, str(FIXTURE), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr, proc.stderr
    assert "error: ENOSPC" in proc.stderr
