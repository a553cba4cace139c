"""Prompt tokens per user for each agent, beside the original protocol's plan, and how stable each role's prefix is.

Run: ``PYTHONPATH=src python bench/bench_tokens.py [--users 2] [--agents native,rag,awe,awi]``.

Each agent runs the whole protocol once on a procedural ``v1.base`` environment against the benchmark
endpoint (``bench/_endpoint.py --prefix-stats``, own process, zero latency, no cache), one user at a time
(content does not depend on concurrency; the order makes "the previous call of a role" the same user's).
Tokens are the endpoint's count: whitespace-separated words of the messages (a real tokenizer gives more
tokens, in about the same proportions); ``embedder`` counts words sent.

**Beside the original.** The original AMemGym code is not here; its protocol is documented in
docs/compat.md. On the same file it sends the same conversation and the same evaluation requests (native:
the whole conversation, no system prompt, one answer and one probe per question and period), so those
rows are the same plan. Two documented differences change the count: the original's upper bound asks
every (question, option) pair, amemgym only the value combinations that hold at some period (computed
here from the file, each prompt rendered with amemgym's upper-bound template, so both are priced in the
same words); and the original's simulator prompt also carried the state's values and both last messages,
which cannot be priced without its wording (not counted: the original's simulator rows would be larger).

**Prefix stability.** For each role the endpoint tallies how many characters of each prompt repeat, from
the start, the role's previous prompt ("previous") and the longest run of leading messages some earlier
prompt of the role began with ("any", what an unbounded prefix cache could reuse).
"""

from __future__ import annotations

import argparse

from _common import Endpoint, bench_config, procedural, run_once

from amemgym.families.statetrack.asking import upper_bound_prompt
from amemgym.families.statetrack.data.model import Environment
from amemgym.families.statetrack.questioning import needed_combinations


def words(text: str) -> int:
    """The endpoint's token count."""
    return len(text.split())


def upper_bound_plans(env: Environment) -> tuple[tuple[int, int], tuple[int, int]]:
    """(calls, prompt tokens) of the upper bound over all users: amemgym's plan, the original's plan."""
    ours = theirs = (0, 0)
    for user in env.users:
        for q, combo in needed_combinations(user):
            ours = (ours[0] + 1, ours[1] + words(upper_bound_prompt(user.qas[q], combo)))
        for qa in user.qas:
            for choice in qa.answer_choices:
                theirs = (theirs[0] + 1, theirs[1] + words(upper_bound_prompt(qa, tuple(choice.state))))
    return ours, theirs


def main() -> None:
    """Parse flags, run each agent once, print the per-role and the prefix tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--agents", default="native,rag,awe,awi")
    args = parser.parse_args()

    env = procedural("v1.base", args.users, args.seed)
    n = len(env.users)
    (ub_calls, ub_tok), (orig_calls, orig_tok) = upper_bound_plans(env)
    print(f"v1.base procedural: {n} users x {env.num_periods} periods; per user:")
    print(f"{'agent':<8}{'role':<11}{'calls':>8}{'prompt tok':>12}{'compl. tok':>12}{'prompt/call':>13}"
          f"{'original plan: calls':>22}{'prompt tok':>12}")
    prefixes = {}
    for agent in args.agents.split(","):
        with Endpoint(0.0, ["--prefix-stats"]) as ep:
            cfg = bench_config("v1.base", ep.url, 1)
            m = run_once(env, cfg, agent)
            prefixes[agent] = ep.stats()["prefix"]
        for role, u in m.usage.items():
            if not u["calls"]:
                continue
            calls, prompt = u["calls"], u["prompt_tokens"]
            orig = ""
            if role == "agent":
                # Everything but the upper bound is the same plan; the upper bound is re-priced.
                orig = f"{(calls - ub_calls + orig_calls) / n:>22.0f}{(prompt - ub_tok + orig_tok) / n:>12.0f}"
            elif role == "simulator":
                orig = f"{'(more: not priced)':>34}"
            print(f"{agent:<8}{role:<11}{calls / n:>8.0f}{prompt / n:>12.0f}{u['completion_tokens'] / n:>12.0f}"
                  f"{prompt / calls:>13.0f}{orig}", flush=True)
    print(f"upper bound per user: amemgym {ub_calls / n:.0f} calls, {ub_tok / n:.0f} prompt tokens; original plan "
          f"{orig_calls / n:.0f} calls, {orig_tok / n:.0f} prompt tokens (included in the agent rows above)")
    print()
    print("share of each prompt (characters) that repeats an earlier prompt of its role from the start")
    print(f"{'agent':<8}{'role':<16}{'calls':>8}{'vs previous':>13}{'vs any earlier':>16}")
    for agent, roles in prefixes.items():
        for role, p in sorted(roles.items()):
            print(f"{agent:<8}{role:<16}{p['calls']:>8}{100 * p['previous']:>12.1f}%{100 * p['any']:>15.1f}%")


if __name__ == "__main__":
    main()
