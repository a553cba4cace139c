"""Prompt and completion tokens per role for a full run of each agent (the cost side of docs/design.md §10).

Run: ``PYTHONPATH=src python bench/bench_tokens.py [--preset v1.base] [--users 2] [--agents native,rag,awe,awi]``.
Each agent runs the whole protocol once against the benchmark endpoint (zero latency, no cache), and one
row per (agent, role) shows the calls and tokens the endpoint reported (it counts whitespace-separated
words, so the numbers compare requests, not a real tokenizer's bill). ``embedder`` rows count words sent.
"""

from __future__ import annotations

import argparse

from _common import Endpoint, bench_config, procedural, run_once


def main() -> None:
    """Parse flags, run each agent once, print the per-role table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="v1.base")
    parser.add_argument("--users", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--agents", default="native,rag,awe,awi")
    args = parser.parse_args()

    env = procedural(args.preset, args.users, args.seed)
    print(f"{args.preset}: {len(env.users)} users x {env.num_periods} periods")
    print(f"{'agent':<8}{'role':<11}{'calls':>8}{'prompt tok':>12}{'compl. tok':>12}{'prompt/call':>13}")
    with Endpoint(0.0) as ep:
        cfg = bench_config(args.preset, ep.url, len(env.users))
        for agent in args.agents.split(","):
            m = run_once(env, cfg, agent)
            for role, u in m.usage.items():
                if not u["calls"]:
                    continue
                print(f"{agent:<8}{role:<11}{u['calls']:>8}{u['prompt_tokens']:>12}{u['completion_tokens']:>12}"
                      f"{u['prompt_tokens'] / u['calls']:>13.0f}", flush=True)


if __name__ == "__main__":
    main()
