"""How wall time and memory grow with users and periods (target: linear).

Run: ``PYTHONPATH=src python bench/bench_scale.py [--agent native] [--latency 0.01] [--users 5,10,20,40]
[--periods 10,20,40]``. Each cell runs in a fresh process (so peak RSS is that run's own) on a procedural
``v1.base``-shaped environment with the given users and periods, against the benchmark endpoint with a
small fixed latency, and the table shows model calls, wall seconds, wall per call, harness CPU per call
and the peak resident memory of the harness process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import Endpoint, bench_config, dump, procedural, run_once


def one_cell(args: argparse.Namespace) -> None:
    """Child mode: run one (users, periods) cell and print its numbers as JSON."""
    env = procedural("v1.base", args.cell_users, args.seed, periods=args.cell_periods)
    cfg = bench_config("v1.base", args.url, len(env.users))
    m = run_once(env, cfg, args.agent)
    print(dump({"calls": m.calls, "wall": m.wall, "cpu": m.cpu, "rss": m.peak_rss_mb}))


def main() -> None:
    """Parse flags; run every cell in its own process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="native")
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--users", default="5,10,20,40")
    parser.add_argument("--periods", default="10,20,40")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--cell-users", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cell-periods", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell_users:
        one_cell(args)
        return
    print(f"agent {args.agent}, latency {args.latency * 1000:g} ms")
    print(f"{'users':>6}{'periods':>8}{'calls':>8}{'wall s':>9}{'ms/call':>9}{'CPU ms/call':>13}{'peak RSS MB':>13}")
    with Endpoint(args.latency) as ep:
        for periods in (int(p) for p in args.periods.split(",")):
            for users in (int(u) for u in args.users.split(",")):
                out = subprocess.run([sys.executable, str(Path(__file__)), "--agent", args.agent, "--url", ep.url,
                                      "--seed", str(args.seed), "--cell-users", str(users),
                                      "--cell-periods", str(periods)], capture_output=True, text=True)
                if out.returncode != 0:
                    print(f"{users:>6}{periods:>8}  failed: {out.stderr.strip().splitlines()[-1:]}")
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{users:>6}{periods:>8}{r['calls']:>8}{r['wall']:>9.2f}{1000 * r['wall'] / r['calls']:>9.3f}"
                      f"{1000 * r['cpu'] / r['calls']:>13.3f}{r['rss']:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
