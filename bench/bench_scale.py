"""Scale: peak memory and run-directory size per user, and what a resume after a kill at half-way redoes.

Run: ``PYTHONPATH=src python bench/bench_scale.py [--users 100,1000] [--kill-at 0.5]``.

For each size it generates a procedural ``v1.base`` environment (``amemgym generate``), starts the benchmark
endpoint (``bench/_endpoint.py``, own process, zero latency) and runs ``amemgym run`` with default settings
(a fresh cache directory), as a separate process. When ``--kill-at`` of all sessions are recorded
(``users/*/sessions.jsonl``), the process gets SIGKILL; the same command then resumes the run to the end.
Printed per size:

* calls served (both invocations) and harness CPU per call (both invocations, each with its worker
  processes: the benchmark adopts the killed invocation's workers as a Linux child subreaper, so their CPU
  up to the kill is counted too);
* peak RSS of the largest process (``ru_maxrss``, workers included) and per user;
* the run directory's size at the end, per user;
* sessions in flight at the kill (users with a recorded session beyond their checkpoint, or with some but
  not all sessions recorded: an upper bound on the sessions the kill interrupted) and **sessions redone**
  by the resume (records of the same session written twice; the last one wins);
* the 1-minute load average at the start and end.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import Endpoint

MODEL = "fake-model"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def generate(out: Path, users: int) -> Path:
    """A procedural v1.base environment of ``users`` users; returns its data.json."""
    subprocess.run([sys.executable, "-m", "amemgym", "generate", "--config", "v1.base", "--generator", "procedural",
                    "--users", str(users), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out / "data.json"


def sessions_per_user(env_file: Path) -> dict[str, int]:
    """Each user's folder in the run directory -> the sessions of its episode."""
    from amemgym.families.statetrack.data.io import load_environment
    from amemgym.families.statetrack.layout import user_folder

    return {user_folder(u.id): sum(len(p.sessions) for p in u.periods) for u in load_environment(env_file).users}


def recorded(rundir: Path) -> Counter[tuple[str, int, int]]:
    """How often each (user folder, period, session) is recorded in the run's sessions.jsonl files."""
    seen: Counter[tuple[str, int, int]] = Counter()
    for path in (rundir / "users").glob("*/sessions.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by the kill
            seen[(path.parent.name, rec["period"], rec["session"])] += 1
    return seen


def lines(rundir: Path) -> int:
    """Complete lines in all sessions.jsonl files (cheap progress count)."""
    return sum(p.read_bytes().count(b"\n") for p in (rundir / "users").glob("*/sessions.jsonl"))


def in_flight_at_kill(at_kill: Counter[tuple[str, int, int]], per_user: dict[str, int]) -> int:
    """Users with some but not all sessions recorded at the kill: each had at most one session under way."""
    done = Counter(folder for folder, _, _ in at_kill)
    return sum(1 for folder, n in per_user.items() if 0 < done.get(folder, 0) < n)


def start_run(env_file: Path, out: Path, url: str, cache: Path, log: Path) -> subprocess.Popen[bytes]:
    """``amemgym run`` with default settings against ``url``, its console output into ``log``."""
    cmd = [sys.executable, "-m", "amemgym", "run", "--env", str(env_file), "--out", str(out),
           "--set", f"llm.default.base_url={url}", "--set", f"llm.default.model={MODEL}"]
    env = {**os.environ, "AMEMGYM_CACHE_DIR": str(cache), "OPENAI_API_KEY": "sk-bench"}
    with open(log, "ab") as fh:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=fh)


def reap(proc: subprocess.Popen[bytes]) -> tuple[int, float, float]:
    """Wait for ``proc``: (exit status, CPU seconds, peak RSS in MB) of that process."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def adopt_orphans() -> None:
    """Become a child subreaper (Linux): a killed run's workers are then re-parented here, not to init, and
    :func:`reap_pid` can collect their CPU and peak memory."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (from /proc's parent links)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        parent[int(stat.parent.name)] = int(fields[1])
    found, todo = [], [pid]
    while todo:
        above = todo.pop()
        kids = [p for p, pp in parent.items() if pp == above]
        found += kids
        todo += kids
    return found


def reap_pid(pid: int, patience: float = 30.0) -> tuple[float, float]:
    """Wait for an adopted process to end (it dies with its killed parent): (CPU seconds, peak RSS in MB)."""
    deadline = time.monotonic() + patience
    while True:
        done, _, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        if time.monotonic() > deadline:
            raise SystemExit(f"process {pid} outlived its killed run by {patience:.0f} s")
        time.sleep(0.05)


def size_bytes(root: Path) -> int:
    """Bytes of every file under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def one_size(users: int, kill_at: float, tmp: Path) -> None:
    """Generate, run, kill, resume and print one row."""
    load0 = os.getloadavg()[0]
    env_file = generate(tmp / f"env_{users}", users)
    per_user = sessions_per_user(env_file)
    total = sum(per_user.values())
    out, cache = tmp / f"run_{users}", tmp / f"cache_{users}"
    with Endpoint(0.0) as ep:
        start = time.perf_counter()
        log = tmp / f"run_{users}.log"
        first = start_run(env_file, out, ep.url, cache, log)
        while first.poll() is None and (not (out / "users").exists() or lines(out) < kill_at * total):
            time.sleep(0.5)
        killed = first.poll() is None
        orphans = descendants(first.pid) if killed else []
        if killed:
            first.send_signal(signal.SIGKILL)
        _, cpu1, rss1 = reap(first)
        for pid in orphans:
            cpu, rss = reap_pid(pid)
            cpu1, rss1 = cpu1 + cpu, max(rss1, rss)
        at_kill = recorded(out)
        busy = in_flight_at_kill(at_kill, per_user)
        second = start_run(env_file, out, ep.url, cache, log)
        code, cpu2, rss2 = reap(second)
        wall = time.perf_counter() - start
        calls = ep.served()
    if code != 0:
        raise SystemExit(f"the resumed run exited {code}: {log.read_text(errors='replace')[-2000:]}")
    final = recorded(out)
    redone = sum(n - 1 for n in final.values() if n > 1)
    size = size_bytes(out)
    print(f"{users:>6}{total:>9}{sum(at_kill.values()):>9}{busy:>8}{redone:>8}{calls:>8}"
          f"{(cpu1 + cpu2) / calls * 1000:>10.2f}{max(rss1, rss2):>9.0f}{max(rss1, rss2) / users * 1000:>11.0f}"
          f"{size / 2**20:>9.1f}{size / users / 1024:>10.0f}{wall:>8.0f}{load0:>7.1f}/{os.getloadavg()[0]:<5.1f}"
          f"{'' if killed else '  (finished before the kill point)'}", flush=True)


def main() -> None:
    """Parse flags and print one row per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="100", help="comma-separated numbers of users (the target is 1000)")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of sessions recorded at the kill")
    args = parser.parse_args()
    adopt_orphans()
    print("v1.base procedural, native, zero latency, default settings; killed once, then resumed")
    print(f"{'users':>6}{'sessions':>9}{'at kill':>9}{'in fl.':>8}{'redone':>8}{'calls':>8}{'CPU ms/c':>10}"
          f"{'RSS MB':>9}{'KB RSS/u':>11}{'dir MB':>9}{'dir KB/u':>10}{'wall s':>8}{'load':>13}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for users in (int(u) for u in args.users.split(",")):
            one_size(users, args.kill_at, Path(tmp))


if __name__ == "__main__":
    main()
