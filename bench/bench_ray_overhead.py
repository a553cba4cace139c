"""What Ray costs on one machine: the same fake-endpoint run with the local executor and the Ray executor.

Run: ``PYTHONPATH=src python bench/bench_ray_overhead.py [--latency 0.05] [--preset tiny] [--users 4]``
(or ``--env FILE``). Needs the ``ray`` extra. The fake OpenAI-compatible endpoint runs as its own process;
the response cache is off so every call reaches it, and its concurrency limit is far above what a run can
reach, so both executors may run every user at once.

Printed: ``ray.init`` time (paid once per driver), the local wall time, and two Ray runs: the first starts
its worker processes (cold), the second reuses them (warm), which is what a long run on a cluster sees
after its first tasks. Every wall time is ``Runner.run()`` alone, manifest and metrics included.
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
from amemgym.engine.executor import RayUnitExecutor
from amemgym.engine.ray import import_ray
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.data.model import Environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient


def environment(args: argparse.Namespace) -> Environment:
    """A file, or a procedural environment of the chosen preset and size."""
    if args.env:
        return load_environment(args.env)
    from amemgym.families.statetrack.generate.procedural import generate_procedural

    env, _ = generate_procedural(env_preset(args.preset), seed=args.seed, num_users=args.users)
    return env


def start_endpoint(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The fake endpoint in its own process, and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "amemgym.testing.fake_endpoint", "--port", "0",
                             "--latency", str(latency)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def timed_run(env: Environment, cfg: AppConfig, rundir: Path,
                    executor: RayUnitExecutor | None) -> tuple[float, int]:
    """Wall seconds and model calls of one fresh run."""
    llm = LLMClient(cfg.llm, cache=None)
    start = time.perf_counter()
    try:
        outcome = await Runner(env, resolve_agent("native"), rundir, cfg, llm).run(executor=executor)
    finally:
        await llm.aclose()
    wall = time.perf_counter() - start
    if outcome.failures:
        raise SystemExit(f"run failed: {outcome.failures[0]}")
    return wall, outcome.usage.totals().calls


def main() -> None:
    """Parse flags, run local then Ray (cold, warm), print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call at the fake endpoint")
    parser.add_argument("--preset", default="tiny", help="procedural environment preset (tiny, v1.base, ...)")
    parser.add_argument("--users", type=int, default=None, help="users (default: the preset's)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--env", type=Path, default=None, help="run this environment file instead")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    parser.add_argument("--task-cpus", type=float, default=1.0, help="CPUs Ray reserves per episode task")
    args = parser.parse_args()

    ray = import_ray()
    env = environment(args)
    cfg = load_config(args.preset if not args.env else None)
    cfg.run.user_concurrency = len(env.users)
    proc, url = start_endpoint(args.latency)
    try:
        cfg.llm = LLMConfig(default=EndpointConfig(base_url=url, model="fake-model", max_concurrency=100_000,
                                                   timeout_s=120, max_retries=3), cache=False)
        with tempfile.TemporaryDirectory() as tmp:
            local, calls = asyncio.run(timed_run(env, cfg, Path(tmp) / "local", None))
            t0 = time.perf_counter()
            ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
            init = time.perf_counter() - t0
            try:
                executor = RayUnitExecutor(num_cpus=args.task_cpus)
                cold, ray_calls = asyncio.run(timed_run(env, cfg, Path(tmp) / "cold", executor))
                warm, _ = asyncio.run(timed_run(env, cfg, Path(tmp) / "warm", executor))
            finally:
                ray.shutdown()
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    print(f"environment: {len(env.users)} users x {env.num_periods} periods, latency {args.latency * 1000:g} ms, "
          f"Ray cluster {args.cpus} CPUs, {args.task_cpus:g} CPU per task")
    print(f"model calls: local {calls}, ray {ray_calls}")
    print(f"ray.init: {init:.2f} s (once per driver)")
    print(f"local executor: {local:.2f} s")
    print(f"ray executor, cold workers: {cold:.2f} s ({cold / local:.2f} x local)")
    print(f"ray executor, warm workers: {warm:.2f} s ({warm / local:.2f} x local)")


if __name__ == "__main__":
    main()
