"""How close a whole run comes to its critical path against an endpoint with fixed latency (target: within 10 % of it).

Run: ``PYTHONPATH=src python bench/bench_critical_path.py [--preset v1.base] [--users 20] [--latency 0.05]
[--agents native,rag,awe,awi]``. For each agent it runs the full protocol (conversations, every period's
questions and state probes, upper-bound questions, metrics) against the fake endpoint in its own process
(``bench/_endpoint.py``; embeddings go there too, so no local model spends CPU here), with the response
cache off and no concurrency limit, and prints side by side:

* the measured wall time of ``Runner.run()``;
* the critical-path bound: the longest chain of dependent calls of any user times the latency (the chain
  is defined in ``bench/_common.py``: conversation turns, the memory writes and retrievals that must
  precede a reply, and the last period's evaluation);
* their ratio (target <= 1.1);
* the harness's CPU time per model call and calls per second (the endpoint's CPU is in another process).
  ``--latency 0`` makes the run a pure throughput test (target <= 1 ms per call).
"""

from __future__ import annotations

import argparse

from _common import Endpoint, bench_config, chain_length, procedural, run_once


def main() -> None:
    """Parse flags, run each agent once, print one row per agent."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call at the fake endpoint")
    parser.add_argument("--preset", default="v1.base", help="procedural environment preset")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--agents", default="native,rag,awe,awi")
    args = parser.parse_args()

    env = procedural(args.preset, args.users, args.seed)
    sessions = sum(len(p.sessions) for u in env.users for p in u.periods)
    print(f"{args.preset}: {len(env.users)} users x {env.num_periods} periods, {sessions} sessions; "
          f"latency {args.latency * 1000:g} ms")
    print(f"{'agent':<8}{'calls':>7}{'chain':>7}{'bound s':>9}{'wall s':>9}{'ratio':>7}{'CPU ms/call':>13}"
          f"{'calls/s':>9}{'endpoint CPU ms/call':>22}")
    with Endpoint(args.latency) as ep:
        cfg = bench_config(args.preset, ep.url, len(env.users))
        for agent in args.agents.split(","):
            chain = max(chain_length(u, cfg, agent) for u in env.users)
            ep_cpu0 = ep.cpu_seconds()
            m = run_once(env, cfg, agent)
            ep_cpu = ep.cpu_seconds() - ep_cpu0
            bound = chain * args.latency
            ratio = f"{m.wall / bound:.3f}" if bound else "-"
            print(f"{agent:<8}{m.calls:>7}{chain:>7}{bound:>9.2f}{m.wall:>9.2f}{ratio:>7}"
                  f"{1000 * m.cpu / max(m.calls, 1):>13.3f}{m.calls / m.wall:>9.1f}"
                  f"{1000 * ep_cpu / max(m.calls, 1):>22.3f}", flush=True)


if __name__ == "__main__":
    main()
