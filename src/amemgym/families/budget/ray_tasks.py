"""Budget episodes as Ray tasks: one task per episode, writing into the shared run folder.

An episode is sequential inside (each event sees the store the previous one left), so it is the unit of
distribution, as a user is for statetrack. The cluster, endpoint checks, per-task config and slot count are
the statetrack executor's (``amemgym.run.ray_executor``); only the task body differs. Each task builds its
own client from the task config (each endpoint's concurrency divided by the slots in flight), mixes the
run seed into every call, checks that the agent endpoint still serves the model the driver pinned, and
writes ``results.json`` like a local run. A task whose worker died is retried by Ray and resumes from the
episode's checkpoint.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...config import AppConfig
from ...errors import RunError
from ...llm.usage import UsageLedger
from ...run.ray_executor import ClientFactory, default_client, start_ray, task_config, task_slots
from ...storage import atomic_write_json

#: The chat roles a budget episode of a tool agent calls (a memory agent adds ``memory``, a judge ``judge``).
ROLES: tuple[str, ...] = ("agent",)


@dataclass(frozen=True)
class BudgetJob:
    """One episode for one Ray task (pickled to the worker)."""

    env: Path
    out: Path
    agent: str
    cfg: AppConfig
    served: str
    extra: dict[str, Any]
    make_client: ClientFactory
    judge: bool = False


def run_budget_job(job: BudgetJob) -> dict[str, Any]:
    """Run one episode to completion in this process; returns its usage ledger as plain data."""
    from .run import run_episode

    async def go() -> dict[str, Any]:
        llm = job.make_client(job.cfg)
        llm.sample_seed = job.cfg.run.seed
        try:
            served = await llm.model_identity("agent")
            if served != job.served:
                raise RunError(f"the agent endpoint serves {served!r} on this worker, the run pinned {job.served!r}")
            results = await run_episode(job.env, job.agent, job.out, llm, tools=job.cfg.budget.tools,
                                        judge=job.judge)
            results.update(job.extra)
            atomic_write_json(job.out / "results.json", results)
        finally:
            await llm.aclose()
            if llm.cache is not None:
                llm.cache.close()
        return {"usage": llm.ledger.to_dict()}

    return asyncio.run(go())


async def run_on_ray(cfg: AppConfig, root: Path, episodes: list[tuple[Path, str, str]], agent: str, served: str,
                     extra: dict[str, Any], *, address: str | None, ledger: UsageLedger,
                     make_client: ClientFactory | None = None, roles: tuple[str, ...] = ROLES, judge: bool = False,
                     max_retries: int = 3) -> list[dict[str, Any]]:
    """Run ``episodes`` (data file, folder relative to ``root``, label) as Ray tasks; merge usage into ``ledger``.

    ``roles`` are the chat roles the episodes call (each needs an HTTP endpoint); ``judge`` sends rule
    failures to the judge role. Returns the failures (one per episode whose task failed for good), keyed by the
    relative folder.
    """
    if not episodes:
        return []
    slots = task_slots(cfg, len(episodes), None, roles)
    tcfg = task_config(cfg, slots, roles)
    ray, started = start_ray(address, {})
    remote = ray.remote(max_retries=max_retries, retry_exceptions=False, num_cpus=1)(run_budget_job)
    gate = asyncio.Semaphore(slots)
    failures: list[dict[str, Any]] = []

    async def one(env: Path, rel: str, label: str) -> None:
        job = BudgetJob(env=env.resolve(), out=(root / rel).resolve(), agent=agent, cfg=tcfg, served=served,
                        extra={**extra, "episode_path": rel}, make_client=make_client or default_client,
                        judge=judge)
        async with gate:
            try:
                result = await remote.remote(job)
            except ray.exceptions.RayError as exc:
                first = str(exc).strip().splitlines()
                failures.append({"episode": rel, "label": label, "error": first[-1] if first else
                                 type(exc).__name__})
                return
        ledger.merge(UsageLedger.from_dict(result["usage"]))

    try:
        await asyncio.gather(*(one(*e) for e in episodes))
    finally:
        if started:
            ray.shutdown()
    return failures
