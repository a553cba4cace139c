"""Shared pieces of the benchmarks: the endpoint process, one in-process run, and its config."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import amemgym.llm.openai_backend  # noqa: F401 - imported up front as the CLI does; not part of a run's time
from amemgym.agents import resolve_agent
from amemgym.config import AppConfig, EndpointConfig, LLMConfig, env_preset, load_config
from amemgym.families.statetrack.data.model import Environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient

BENCH = Path(__file__).resolve().parent


def procedural(preset: str, users: int | None, seed: int, periods: int | None = None) -> Environment:
    """A procedural environment of the preset's shape (optionally with more or fewer periods)."""
    from amemgym.families.statetrack.generate.procedural import generate_procedural

    cfg = env_preset(preset)
    if periods is not None:
        # More periods need more changes per variable, or the content pack runs out of variables.
        per_state = max(cfg.max_changes_per_state, -(-cfg.max_changes_per_state * periods // cfg.num_periods))
        cfg = cfg.model_copy(update={"num_periods": periods, "max_changes_per_state": per_state})
    env, _ = generate_procedural(cfg, seed=seed, num_users=users)
    return env


class Endpoint:
    """The benchmark endpoint (bench/_endpoint.py) in its own process, so its CPU is not counted here."""

    def __init__(self, latency: float, extra: list[str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, str(BENCH / "_endpoint.py"), "--latency", str(latency),
                                      *(extra or [])], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def cpu_seconds(self) -> float:
        """CPU time the endpoint process has used so far (Linux /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stats(self) -> dict[str, Any]:
        """The endpoint's counters (:meth:`FakeEndpoint.stats`; it prints them on SIGUSR1)."""
        assert self.proc.stdout is not None
        self.proc.send_signal(signal.SIGUSR1)
        return dict(json.loads(self.proc.stdout.readline()))

    def served(self) -> int:
        """Chat calls answered so far."""
        return int(self.stats()["calls"])

    def close(self) -> None:
        """Stop the endpoint process."""
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def bench_config(preset: str, url: str, users: int) -> AppConfig:
    """The preset's run settings against ``url`` (embeddings too), no cache, no concurrency limit."""
    cfg = load_config(preset)
    cfg.run.user_concurrency = max(users, 1)
    cfg.llm = LLMConfig(default=EndpointConfig(base_url=url, model="fake-model", max_concurrency=100_000,
                                               timeout_s=120, max_retries=3), cache=False)
    return cfg


@dataclass
class Measured:
    """One run's numbers."""

    wall: float
    cpu: float
    calls: int
    retries: int
    usage: dict[str, Any]
    peak_rss_mb: float


async def _run(env: Environment, cfg: AppConfig, agent: str, rundir: Path) -> Measured:
    llm = LLMClient(cfg.llm, cache=None)
    runner = Runner(env, resolve_agent(agent), rundir, cfg, llm)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        outcome = await runner.run()
    finally:
        await llm.aclose()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if outcome.failures:
        raise SystemExit(f"run failed: {outcome.failures[0]}")
    ledger = llm.ledger
    calls = sum(u.calls for u in ledger.roles.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Measured(wall, cpu, calls, ledger.totals().retries, ledger.to_dict(), peak)


def run_once(env: Environment, cfg: AppConfig, agent: str) -> Measured:
    """Run ``agent`` on ``env`` once into a throw-away run directory."""
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_run(env, cfg, agent, Path(tmp) / "run"))


def dump(obj: Any) -> str:
    """One JSON line."""
    return json.dumps(obj, sort_keys=True)
