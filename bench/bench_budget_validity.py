"""Budget family: the validity gate's margins on fresh seeds, per tier and seed by seed.

Run: PYTHONPATH=src python bench/bench_budget_validity.py [--seeds 100-110]

For every tier and every seed of the range (all ten domains at that seed), it plays the scripted
strategies and prints the worst value seen next to its bound:
- each guesser's accuracy pooled over the seed's episodes (ceiling 0.05);
- names_plus_changes' maintenance (ceiling 0.2) and ignore_contradictions' (ceiling 0.75, perfect is 1.0);
- the perfect strategy's lowest composite (1.0) and the lowest efficiency a perfect answerer keeps with the
  whole budget spent (floor 0.5);
- the number of per-episode invariant failures of `validate`.
"""

from __future__ import annotations

import argparse
import time

from amemgym.families.budget.domain import domain_names, load_domain
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.scoring import score_episode
from amemgym.families.budget.strategies import run_strategy
from amemgym.families.budget.tiers import TIERS
from amemgym.families.budget.validity import GUESS_CEILING, judge, validate_episode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="100-110", help="a range A-B of fresh seeds (B excluded)")
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.seeds.split("-"))
    print(f"seeds {lo}-{hi - 1} x {len(domain_names())} domains per tier")
    for tier in TIERS:
        t0 = time.perf_counter()
        worst_guess = {"guess_blind": (0.0, lo), "guess_smart": (0.0, lo)}
        names_only, ignore_silent, perfect, full_eff, fails = 0.0, 0.0, 1.0, 1.0, 0
        for seed in range(lo, hi):
            right = dict.fromkeys(worst_guess, 0)
            answers = 0
            for domain in domain_names():
                ep = build_episode(tier, domain, seed)
                result = validate_episode(ep, f"{tier}/{domain}/{seed}")
                fails += len(result.failures)
                s = result.scores
                for name in worst_guess:
                    right[name] += round(s[name].accuracy * s[name].questions)
                answers += s["perfect"].questions
                names_only = max(names_only, s["names_plus_changes"].maintenance or 0.0)
                ignore_silent = max(ignore_silent, s["ignore_contradictions"].maintenance or 0.0)
                perfect = min(perfect, s["perfect"].composite or 0.0)
                run = run_strategy("perfect", ep, load_domain(domain))
                full = score_episode(ep, judge(ep, run.answers), ep.tier.writes, run.store.ledger)
                full_eff = min(full_eff, full.efficiency or 0.0)
            for name in worst_guess:
                worst_guess[name] = max(worst_guess[name], (right[name] / answers, seed))
        guess = ", ".join(f"{n} {v:.3f} (seed {s})" for n, (v, s) in worst_guess.items())
        print(f"{tier:9s} worst per-seed guess: {guess} [ceiling {GUESS_CEILING}]; names_plus_changes maintenance "
              f"max {names_only:.3f} [0.2]; ignore_contradictions maintenance max {ignore_silent:.3f} [0.75]; "
              f"perfect composite min {perfect:.3f}; full-budget efficiency min {full_eff:.3f} [0.5]; "
              f"invariant failures {fails}; {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
