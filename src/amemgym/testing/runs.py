"""Helpers for tests and soaks that run the real CLI in a subprocess against a fake endpoint and kill it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..engine.journal import fold
from ..errors import RunError
from .fake_endpoint import FakeEndpoint


def start_run(ep: FakeEndpoint, args: Sequence[str], cache: Path, *, api_key: str = "test-key",
              pythonpath: Path | None = None, capture: bool = True) -> subprocess.Popen[str]:
    """Start ``python -m amemgym <args>`` against ``ep`` with its own cache and no inherited OPENAI_/AMEMGYM_ vars."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AMEMGYM_"))}
    env.update(OPENAI_BASE_URL=ep.base_url, OPENAI_API_KEY=api_key, AMEMGYM_CACHE_DIR=str(cache), COLUMNS="200")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "amemgym", *args], env=env, stdout=out,
                            stderr=subprocess.STDOUT, text=True)


def wait_for_work(ep: FakeEndpoint, proc: subprocess.Popen[str], before: int) -> None:
    """Block until the process has reached the endpoint (start-up takes a variable second or so)."""
    while ep.model_calls == before and proc.poll() is None:
        time.sleep(0.01)


def kill_after(proc: subprocess.Popen[str], delay: float, timeout: float = 60) -> bool:
    """Let ``proc`` run for ``delay`` seconds, SIGKILL it if it is still running, reap it; True if killed."""
    killed = False
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        killed = True
    proc.communicate(timeout=timeout)
    return killed


def damaged_files(rundir: Path) -> list[str]:
    """Files that do not parse (or end in a torn line), and traces in which a conversation turn appears twice."""
    bad = []
    for path in sorted(p for p in rundir.rglob("*") if p.is_file()):
        try:
            if path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
            elif path.suffix == ".jsonl":
                text = path.read_text(encoding="utf-8")
                records = [json.loads(line) for line in text.splitlines()]
                if text and not text.endswith("\n"):
                    raise ValueError("torn last line")
                if path.name == "state.jsonl":
                    fold(path)  # a checkpoint journal: every line must fit the value before it
                if path.name == "trace.jsonl":
                    keys = [(r["period"], r["session"], r["round"], r["role"]) for r in records
                            if r.get("kind") == "message"]
                    if len(keys) != len(set(keys)):
                        raise ValueError("duplicate conversation turns")
        except (ValueError, KeyError, RunError) as exc:
            bad.append(f"{path.relative_to(rundir)}: {exc}")
    return bad
