"""Time the README's first command, ``amemgym run --out DIR`` (bundled tiny env, embedded model), by role.

Run: ``PYTHONPATH=src python bench/bench_embedded_demo.py [--set KEY=VALUE ...]`` only on a quiet machine
(llama.cpp's threads and any other CPU load thrash on 2 cores; the script prints the load average first
and refuses above ``--max-load`` unless ``--force``). It runs the command in a fresh process with a fresh
response cache, so nothing is reused, and prints the wall time (target: under 5 minutes on 2 cores) and
per role: calls, prompt tokens sent, prompt tokens the server actually evaluated (the rest came from
llama.cpp's prefix cache), completion tokens, and the seconds spent waiting on that role's calls (they
overlap, so they add up to more than the wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    """Run the demo once and print the breakdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], help="config override passed to amemgym run")
    parser.add_argument("--agent", default="native")
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"load average (1 min): {load:.2f}")
    if load > args.max_load and not args.force:
        raise SystemExit(f"machine busy (load {load:.2f} > {args.max_load}); rerun when quiet or pass --force")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        cmd = [sys.executable, "-m", "amemgym", "run", "--out", str(out), "--agent", args.agent]
        for item in args.set:
            cmd += ["--set", item]
        env = {**os.environ, "AMEMGYM_CACHE_DIR": str(Path(tmp) / "cache")}
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"amemgym run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        usage = json.loads((out / "usage.json").read_text())["last_invocation"]
        metrics = json.loads((out / "metrics.json").read_text())
    print(f"wall time of `amemgym run --out DIR`: {wall:.1f} s (target < 300 s); "
          f"run itself {metrics.get('wall_seconds_last_invocation', 0):.1f} s, the rest is start-up")
    print(f"{'role':<11}{'calls':>7}{'prompt':>9}{'evaluated':>11}{'completion':>12}{'call s':>9}")
    for role, u in usage.items():
        if not u.get("calls"):
            continue
        print(f"{role:<11}{u['calls']:>7}{u['prompt_tokens']:>9}{u.get('prompt_tokens_processed', 0):>11}"
              f"{u['completion_tokens']:>12}{u['seconds']:>9.1f}")


if __name__ == "__main__":
    main()
