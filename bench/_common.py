"""Shared pieces of the benchmarks: the endpoint process, one timed run, and the critical-path model.

The critical path of one user, in calls of fixed latency L (every chat and embedding call takes L, all
other work is free, parallelism is unlimited). The agent under test decides three numbers:

* ``E``: calls a reply needs before its chat call to retrieve memory (1 query embedding for rag/awe once
  their store holds anything, else 0);
* ``D``: the depth of writing one batch that left the window (rag: 1 embedding; awi: 1 memory call; awe:
  extraction, embedding of the facts, reconciliation when similar memories exist, embedding of the new
  texts = 3 or 4; native: no writes);
* batches per exchange, from the agent's real :class:`~amemgym.agents.buffered.MessageBuffer`.

Walking the sessions in order, with ``t`` the end of the last reply and ``w`` the end of the pending write:

* the user turn is ready at ``a = t`` for a session's opening message and ``a = t + 1`` after a simulator
  call (the simulator needs only the exchange, never the memory, so it overlaps the write);
* retrieval must see every earlier write: the reply's chat call starts at ``max(a, w) + E`` and ends one
  call later, at the new ``t``;
* if the exchange pushes ``k`` batches out of the window, ``w = t + k * D`` (writes run in the background).

After the last period the final snapshot waits for ``w``, then its evaluation adds ``E + 1`` (every
question's answer and probe are independent of each other). Upper-bound calls (depth 1, from the start)
and the evaluations of earlier periods (run off their snapshots) overlap the chain and never extend it.
For native this is the plain count: per session ``1 + 2 * (rounds - 1)`` calls, plus 1 for the last
evaluation.
"""

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
from amemgym.agents.base import AgentContext
from amemgym.agents.buffered import BufferedAgent, MessageBuffer
from amemgym.config import AppConfig, EndpointConfig, LLMConfig, env_preset, load_config
from amemgym.families.statetrack.data.model import Environment, UserEnv
from amemgym.families.statetrack.runner import Runner
from amemgym.families.statetrack.schedule import rounds_for
from amemgym.llm import LLMClient

BENCH = Path(__file__).resolve().parent


def agent_shape(name: str) -> tuple[str, int, int]:
    """(kind, freq, ns) of a registered agent; native has no buffer (freq 0)."""
    agent = resolve_agent(name).build(LLMClient(), AgentContext(user_id="u", seed=0))
    if isinstance(agent, BufferedAgent):
        return agent.kind, agent.buffer.freq, agent.buffer.ns
    return agent.kind, 0, 0


def chain_length(user: UserEnv, cfg: AppConfig, agent: str) -> int:
    """Dependent calls in one user's episode (see the module docstring for the model)."""
    kind, freq, ns = agent_shape(agent)
    buffer = MessageBuffer(freq, ns) if freq else None
    t = w = 0
    writes = 0
    for p, period in enumerate(user.periods):
        for _ in period.sessions:
            for r in range(rounds_for(user, cfg, p)):
                a = t if r == 0 else t + 1
                e = 1 if kind in ("rag", "awe") and writes else 0
                t = max(a, w) + e + 1
                batches = len(buffer.push("u", "a", "")) if buffer else 0
                for _ in range(batches):
                    depth = {"rag": 1, "awi": 1, "awe": 4 if writes else 3}.get(kind, 0)
                    w = max(w, t) + depth
                    writes += 1
    e = 1 if kind in ("rag", "awe") and writes else 0
    return max(t, w) + e + 1


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

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen([sys.executable, str(BENCH / "_endpoint.py"), "--latency", str(latency)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def cpu_seconds(self) -> float:
        """CPU time the endpoint process has used so far (Linux /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def served(self) -> int:
        """Chat and embedding calls answered so far (the endpoint prints its counts on SIGUSR1)."""
        assert self.proc.stdout is not None
        self.proc.send_signal(signal.SIGUSR1)
        return int(json.loads(self.proc.stdout.readline())["calls"])

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
