"""Where a unit-family run plays its units: the engine's executor interface and its two executors.

:func:`amemgym.engine.runner.run_units` decides what to play (the units without a finished record) and owns
everything around it (lock, manifest, models, usage, failures, metrics, summary); an executor only plays the
units it is handed and returns the failures to record. Every executor leaves the same files in the run
directory: each unit is played through :func:`amemgym.engine.play.play_failures` (locally, or in the worker
that runs it), its usage merged into the run's ledger, ``progress.unit_done`` called once per unit.

- :class:`LocalExecutor`: the units concurrently on this event loop, up to ``run.user_concurrency`` (one when
  serial), on views of the run's one client.
- :class:`RayUnitExecutor`: one Ray task per unit (``engine/ray.py``).
- :class:`~amemgym.engine.processes.ProcessUnitExecutor`: the units spread over ``run.workers`` local processes
  (chosen when ``run.workers`` is above 1, the run is not serial, every role the plan calls is served over
  HTTP and no test client factory is given; ``0``, statetrack's "auto", is one process for a unit family).

A family may bring its own (an object with the same ``play`` method, e.g. worker processes on one machine) by
an optional ``executor(opts, cfg, units)`` hook returning it, or None for the engine's choice of ``--executor``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .play import play_failures
from .ray import play_on_ray

if TYPE_CHECKING:
    from ..config import AppConfig
    from ..llm.client import LLMClient
    from .contract import AgentPlan, Unit, UnitFamily
    from .models import ModelPins
    from .rundir import UnitRunDir
    from .usage import LiveUsage

__all__ = ["LocalExecutor", "PlayContext", "RayUnitExecutor", "UnitExecutor"]


@dataclass(frozen=True)
class PlayContext:
    """What every executor needs to play a run's units.

    Attributes:
        family: the unit family.
        plan: the agent's plan.
        pins: the run's pins.
        llm: the run's client (its ledger is the run's usage).
        cfg: the run's config.
        rd: the run directory.
        models: what the run holds each role's model to (the served models it pinned, the answered ones).
        run_fields: what every unit's record carries about the run.
        live: the live usage the progress line reads (units played on this loop count into it).
        make_client: builds a client from a config for a unit played elsewhere (None: the endpoints').
        on_done: called once per unit as it ends, finished or failed.
    """

    family: UnitFamily
    plan: AgentPlan
    pins: Mapping[str, Any]
    llm: LLMClient
    cfg: AppConfig
    rd: UnitRunDir
    models: ModelPins
    run_fields: Mapping[str, Any]
    live: LiveUsage | None = None
    make_client: Callable[[AppConfig], LLMClient] | None = None
    on_done: Callable[[], None] = lambda: None


class UnitExecutor(Protocol):
    """Plays units somewhere; the failures to record (none when every unit finished)."""

    async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
        """Play (or resume) every unit of ``units``."""
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """The units concurrently on this event loop, at most ``concurrency`` at a time."""

    concurrency: int = 1

    async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
        """Play each unit on a view of the run's client."""


        gate = asyncio.Semaphore(max(1, self.concurrency))
        failures: list[dict[str, Any]] = []

        async def one(unit: Unit) -> None:
            async with gate:
                failures.extend(await play_failures(ctx.family, unit, ctx.plan, ctx.pins, ctx.llm, ctx.cfg, ctx.rd,
                                                    ctx.run_fields, ctx.live))
            ctx.on_done()

        await asyncio.gather(*(one(u) for u in units))
        return failures


@dataclass(frozen=True)
class RayUnitExecutor:
    """One Ray task per unit.

    Attributes:
        address: the Ray cluster to join (None: this process's, or a local one started and stopped here).
        max_retries: how often Ray re-runs a task whose worker died; the retry resumes from the unit's
            checkpoint, and finished calls come back from the response cache.
        slots: units in flight at once (None: ``run.user_concurrency``); never more than any endpoint's
            ``max_concurrency``.
        make_client: builds each task's client from the task's config (None: the run's, or its endpoints').
        num_cpus: CPUs Ray reserves per task; units mostly wait on the network, so fractions are fine.
        init_kwargs: extra ``ray.init`` arguments when Ray is started here.
    """

    address: str | None = None
    max_retries: int = 3
    slots: int | None = None
    make_client: Callable[[AppConfig], LLMClient] | None = None
    num_cpus: float = 1.0
    init_kwargs: Mapping[str, Any] = field(default_factory=dict)

    async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
        """Play the units as Ray tasks; their usage merged into the run's ledger."""
        return await play_on_ray(ctx.family, units, ctx.plan, ctx.pins, ctx.cfg, ctx.rd.root, ctx.models,
                                 ctx.run_fields, address=self.address, ledger=ctx.llm.ledger,
                                 make_client=self.make_client or ctx.make_client, on_done=ctx.on_done,
                                 max_retries=self.max_retries, slots=self.slots, num_cpus=self.num_cpus,
                                 init_kwargs=self.init_kwargs)
