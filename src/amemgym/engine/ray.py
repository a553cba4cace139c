"""Units as Ray tasks: one task per unit, writing into the shared run directory.

A unit is sequential inside, so it is the unit of distribution, as a user is for statetrack. The cluster
start, endpoint checks, per-task config and slot count are the statetrack executor's
(``amemgym.run.ray_executor``); the task body is :func:`amemgym.engine.runner.play_one`, the same as a local
run's. Each task builds its own client from the task config (each endpoint's concurrency divided by the slots
in flight), mixes the run seed into every call, checks that each role still serves the model the driver
pinned, and writes the unit's record. A task whose worker died is retried by Ray and resumes from the unit's
checkpoint. The family object travels to the worker with the job (it must be picklable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AppConfig
from ..errors import RunError
from ..llm.redact import redact
from ..llm.usage import UsageLedger
from .contract import AgentPlan, Unit, UnitFamily

__all__ = ["UnitJob", "play_on_ray", "run_unit_job"]


@dataclass(frozen=True)
class UnitJob:
    """One unit for one Ray task (pickled to the worker)."""

    family: UnitFamily
    unit: Unit
    plan: AgentPlan
    pins: Mapping[str, Any]
    cfg: AppConfig
    root: Path
    served: Mapping[str, str]
    run_fields: Mapping[str, Any]
    make_client: Callable[[AppConfig], Any]


def run_unit_job(job: UnitJob) -> dict[str, Any]:
    """Play one unit to its end in this process; its usage and failure (None) as plain data."""
    from .rundir import UnitRunDir
    from .runner import play_one

    async def go() -> dict[str, Any]:
        llm = job.make_client(job.cfg)
        llm.sample_seed = job.cfg.run.seed
        failure = None
        try:
            for role, pinned in job.served.items():
                served = await llm.model_identity(role)
                if served != pinned:
                    raise RunError(f"the {role} endpoint serves {served!r} on this worker, the run pinned {pinned!r}")
            failure = await play_one(job.family, job.unit, job.plan, job.pins, llm, job.cfg, UnitRunDir(job.root),
                                     job.run_fields)
        finally:
            await llm.aclose()
            if llm.cache is not None:
                llm.cache.close()
        return {"usage": llm.ledger.to_dict(), "failure": failure}

    return asyncio.run(go())


async def play_on_ray(family: UnitFamily, units: list[Unit], plan: AgentPlan, pins: Mapping[str, Any],
                      cfg: AppConfig, root: Path, served: Mapping[str, str], run_fields: Mapping[str, Any], *,
                      address: str | None, ledger: UsageLedger, make_client: Callable[[AppConfig], Any] | None = None,
                      on_done: Callable[[], None] = lambda: None, max_retries: int = 3) -> list[dict[str, Any]]:
    """Play ``units`` as Ray tasks, at most the slot count at once; merge their usage into ``ledger``.

    Returns the failures (one per unit whose task failed for good, or whose play failed).
    """
    from ..run.ray_executor import default_client, start_ray, task_config, task_slots

    if not units:
        return []
    roles = plan.roles or ("agent",)
    slots = task_slots(cfg, len(units), None, roles)
    tcfg = task_config(cfg, slots, roles)
    ray, started = start_ray(address, {})
    remote = ray.remote(max_retries=max_retries, retry_exceptions=False, num_cpus=1)(run_unit_job)
    gate = asyncio.Semaphore(slots)
    failures: list[dict[str, Any]] = []

    async def one(unit: Unit) -> None:
        job = UnitJob(family=family, unit=unit, plan=plan, pins=pins, cfg=tcfg, root=root.resolve(), served=served,
                      run_fields=run_fields, make_client=make_client or default_client)
        async with gate:
            try:
                result = await remote.remote(job)
            except ray.exceptions.RayError as exc:
                lines = str(exc).strip().splitlines()
                failures.append({"user": unit.id, "stage": "ray_task", "label": unit.label,
                                 "error": redact(lines[-1] if lines else type(exc).__name__)})
                return
            finally:
                on_done()
        ledger.merge(UsageLedger.from_dict(result["usage"]))
        if result["failure"] is not None:
            failures.append(result["failure"])

    try:
        await asyncio.gather(*(one(u) for u in units))
    finally:
        if started:
            ray.shutdown()
    return failures
