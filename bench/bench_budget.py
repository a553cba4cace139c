"""Budget family: episodes generated and validated per second, per tier (single process).

Run: PYTHONPATH=src python bench/bench_budget.py [--seeds N]
Validation runs the nine scripted strategies, the three attacks, and the determinism check (which
regenerates the episode), so it includes one more generation per episode.
"""

from __future__ import annotations

import argparse
import time

from amemgym.families.budget.domain import domain_names
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.tiers import TIERS
from amemgym.families.budget.validity import validate_episode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=2, help="seeds per domain")
    args = parser.parse_args()
    domains = domain_names()
    print(f"{len(domains)} domains x {args.seeds} seeds per tier")
    for tier in TIERS:
        t0 = time.perf_counter()
        episodes = [build_episode(tier, d, s) for d in domains for s in range(args.seeds)]
        gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        failures = sum(len(validate_episode(ep, f"{tier}/{ep.domain}/{ep.seed}").failures) for ep in episodes)
        val = time.perf_counter() - t0
        n = len(episodes)
        print(f"{tier:9s} generated {n / gen:7.1f} episodes/s ({gen / n * 1000:6.1f} ms each); "
              f"validated {n / val:6.1f} episodes/s ({val / n * 1000:6.1f} ms each); failures {failures}")


if __name__ == "__main__":
    main()
