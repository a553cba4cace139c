"""Event-loop CPU per model call of ``amemgym run``, for two or more source trees in interleaved runs.

Run: ``PYTHONPATH=src python bench/bench_cpu_ab.py --trees BASE_CHECKOUT,. [--users 2,20] [--repeat 4]``.
Each run is ``amemgym run`` with default settings (cache on, in a fresh directory) on the side-by-side
environment (3 periods after the first, 2 questions per user) against the zero-latency fake endpoint, in a
process whose ``PYTHONPATH`` is the tree's ``src``. Inside it, ``Runner.run`` is timed: CPU of the main
thread (the event loop, which every user's steps share) and of the whole process, each divided by the
calls the endpoint served. The trees alternate run by run, so a change in the machine's load hits both;
the medians are printed per tree. Wall time is not the measure here: other jobs on the machine move it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import Endpoint
from bench_side_by_side import write_environment

# Runs inside the child: the CLI with Runner.run wrapped in CPU clocks; prints one JSON line.
_CHILD = """
import contextlib, io, json, os, sys, time
os.environ["AMEMGYM_SLOW_EXIT"] = "1"
try:
    from amemgym.families.statetrack import runner as engine
except ImportError:  # a source tree from before the statetrack folder (docs/design.md §15)
    from amemgym.run import engine
inner, m = engine.Runner.run, {}
async def timed(self, *a, **k):
    t0, p0 = time.thread_time(), time.process_time()
    try:
        return await inner(self, *a, **k)
    finally:
        m.update(thread=time.thread_time() - t0, process=time.process_time() - p0)
engine.Runner.run = timed  # the class every import path names
from amemgym.cli import main
sys.argv = ["amemgym", "run", "--env", sys.argv[1], "--out", sys.argv[2],
            "--set", "llm.default.base_url=" + sys.argv[3], "--set", "llm.default.model=fake-model"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main()
print(json.dumps(m))
"""


def main() -> None:
    """Parse flags, alternate the trees ``--repeat`` times per size, print each run and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", required=True, help="comma-separated checkouts (each with a src/ folder)")
    parser.add_argument("--users", default="2,20")
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    print(f"{'tree':<24}{'users':>6}{'calls':>7}{'loop CPU ms/call':>18}{'process CPU ms/call':>21}{'load':>6}")
    with Endpoint(0.0) as ep, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for users in (int(u) for u in args.users.split(",")):
            env_file = tmp / f"env_{users}.json"
            write_environment(env_file, users, 3, 2, 7)
            seen: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
            for k in range(args.repeat):
                for i, tree in enumerate(trees):
                    out = tmp / f"run_{i}_{users}_{k}"
                    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "AMEMGYM_CACHE_DIR": str(out) + ".cache"}
                    before = ep.served()
                    proc = subprocess.run([sys.executable, "-c", _CHILD, str(env_file), str(out), ep.url], env=env,
                                          capture_output=True, text=True)
                    if proc.returncode != 0:
                        raise SystemExit(f"{tree}: {proc.stderr.strip()[-2000:]}")
                    calls = ep.served() - before
                    m = json.loads(proc.stdout.strip().splitlines()[-1])
                    loop, process = 1000 * m["thread"] / calls, 1000 * m["process"] / calls
                    seen[tree].append((loop, process))
                    print(f"{str(tree)[-24:]:<24}{users:>6}{calls:>7}{loop:>18.3f}{process:>21.3f}"
                          f"{os.getloadavg()[0]:>6.1f}", flush=True)
            for tree in trees:
                print(f"{'median ' + str(tree)[-17:]:<24}{users:>6}{'':>7}"
                      f"{statistics.median(a for a, _ in seen[tree]):>18.3f}"
                      f"{statistics.median(b for _, b in seen[tree]):>21.3f}")


if __name__ == "__main__":
    main()
