"""How close a run comes to its critical path against an endpoint with fixed latency (SPEC §10, Speed).

Run: ``PYTHONPATH=src python bench/bench_critical_path.py [--latency 0.05] [--preset tiny] [--users 2]``
(or ``--env FILE``). The fake OpenAI-compatible endpoint runs as a separate process
(``python -m amemgym.testing.fake_endpoint``), so this process's CPU time is the harness's alone. The
client's concurrency limit is set far above the number of calls that can ever be in flight, and the
response cache is off, so every call reaches the endpoint.

The critical path, for the ``native`` agent on-policy (it makes no memory-write calls), is the longest
chain of calls that must happen one after another for one user:

* per session of every period: the agent's reply to the opening message (1 call), then for each further
  round the simulator's user turn followed by the agent's reply (2 calls), i.e. ``1 + 2 * (rounds - 1)``
  with ``rounds`` from the environment's protocol (or the config);
* plus the last period's evaluation: every question's answer and state probe are independent, so they add
  one call of depth.

Everything else overlaps with that chain: upper-bound questions start with the episode and are one call
deep; each earlier period's evaluation runs off its snapshot while the conversation goes on. The bound is
``max over users of chain length x latency``; the script prints it, the measured wall time and their ratio.
With ``--latency 0`` the interesting numbers are the harness's CPU time per model call and calls per second.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from amemgym.agents import resolve_agent
from amemgym.config import AppConfig, EndpointConfig, LLMConfig, env_preset, load_config
from amemgym.data import load_environment
from amemgym.data.model import Environment, UserEnv
from amemgym.llm import LLMClient
from amemgym.run import Runner
from amemgym.run.episode import rounds_for


def chain_length(user: UserEnv, cfg: AppConfig) -> int:
    """Dependent calls in one user's episode (see the module docstring for what the chain is)."""
    conversation = sum(
        len(period.sessions) * (1 + 2 * (rounds_for(user, cfg, p) - 1)) for p, period in enumerate(user.periods)
    )
    return conversation + 1


def environment(args: argparse.Namespace) -> Environment:
    """The environment to run: a file, or a procedural one of the chosen preset and size."""
    if args.env:
        return load_environment(args.env)
    from amemgym.generate.procedural import generate_procedural

    env, _ = generate_procedural(env_preset(args.preset), seed=args.seed, num_users=args.users)
    return env


def start_endpoint(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The fake endpoint in its own process, and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "amemgym.testing.fake_endpoint", "--port", "0",
                             "--latency", str(latency)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def run(env: Environment, cfg: AppConfig, rundir: Path) -> tuple[float, float, int, int]:
    """Wall seconds, process CPU seconds, model calls and retries of one fresh run."""
    llm = LLMClient(cfg.llm, cache=None)
    runner = Runner(env, resolve_agent("native"), rundir, cfg, llm)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        outcome = await runner.run()
    finally:
        await llm.aclose()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if outcome.failures:
        raise SystemExit(f"run failed: {outcome.failures[0]}")
    totals = llm.ledger.totals()
    return wall, cpu, totals.calls, totals.retries


def main() -> None:
    """Parse flags, run once, print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call at the fake endpoint")
    parser.add_argument("--preset", default="tiny", help="procedural environment preset (tiny, v1.base, ...)")
    parser.add_argument("--users", type=int, default=None, help="users (default: the preset's)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--env", type=Path, default=None, help="run this environment file instead")
    args = parser.parse_args()

    env = environment(args)
    cfg = load_config(args.preset if not args.env else None)
    cfg.run.user_concurrency = len(env.users)
    proc, url = start_endpoint(args.latency)
    try:
        cfg.llm = LLMConfig(default=EndpointConfig(base_url=url, model="fake-model", max_concurrency=100_000,
                                                   timeout_s=120, max_retries=3))
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu, calls, retries = asyncio.run(run(env, cfg, Path(tmp) / "run"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    chains = [chain_length(u, cfg) for u in env.users]
    bound = max(chains) * args.latency
    print(f"environment: {len(env.users)} users x {env.num_periods} periods, "
          f"{sum(len(p.sessions) for u in env.users for p in u.periods)} sessions, latency {args.latency * 1000:g} ms")
    print(f"model calls: {calls} (retries {retries}); longest dependent chain: {max(chains)} calls")
    print(f"measured wall time: {wall:.3f} s")
    if args.latency > 0:
        print(f"critical-path bound: {bound:.3f} s ({max(chains)} x {args.latency:g} s)")
        print(f"ratio wall / bound: {wall / bound:.3f}")
    print(f"harness CPU: {cpu:.3f} s = {1000 * cpu / max(calls, 1):.3f} ms per model call; "
          f"{calls / wall:.1f} calls/s")


if __name__ == "__main__":
    main()
