"""The one Ray executor: one task per unit of work, writing into a shared run directory.

A unit (a statetrack user's episode, a budget episode, a toy puzzle) is sequential inside, so it is the unit of
distribution. This module owns everything about Ray that does not depend on the family: importing and
starting it (:func:`start_ray`), the endpoint check (the embedded model is per machine, so every role must be
served over HTTP), the per-task config (each endpoint's concurrency divided by the tasks in flight, so the
cluster never exceeds it) and the slot count, and the loop itself (:func:`run_on_ray`): at most ``slots``
tasks in flight, a task whose worker died retried by Ray (it resumes from its checkpoint), a task out of
retries handed back as lost, an optional watcher polled while the tasks run.

Each unit is one picklable :class:`UnitJob`, played in the worker by :func:`run_unit_job`, whose body is
:func:`amemgym.engine.play.play_failures`, the same as a local run's, for every family. Each task builds
its own client from the task config and mixes the run seed into every call, and first checks that each
pinned role still serves the model the driver pinned.

Ray is imported only when a run actually uses this executor.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents.registry import loaded_plugin_modules
from ..config import AppConfig
from ..errors import ConfigError, RunError
from ..llm.client import LLMClient
from ..llm.redact import redact
from ..llm.usage import UsageLedger
from .contract import AgentPlan, RemoteUnit, Unit, UnitFamily
from .models import ModelPins
from .play import play_failures
from .progress import poll_forever
from .rundir import UnitRunDir

__all__ = ["SIDE_ROLES", "RemoteUnit", "UnitJob", "check_endpoints", "default_client", "import_ray", "play_on_ray",
           "run_on_ray", "run_unit_job", "start_ray", "task_config", "task_slots"]

#: Roles whose concurrency a task's or a worker's config divides whether or not the run's plan names them
#: (called by agents and checks on the side).
SIDE_ROLES: tuple[str, ...] = ("embedder", "judge", "generator")


def import_ray() -> Any:
    """The ``ray`` module, or a ConfigError naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'amemgym[ray]'") from None
    return ray


def default_client(cfg: AppConfig) -> LLMClient:
    """The client a task uses unless told otherwise: the run's config and its persistent cache."""
    return LLMClient.from_config(cfg.llm, serial=cfg.run.serial)


def start_ray(address: str | None, init_kwargs: Mapping[str, Any]) -> tuple[Any, bool]:
    """Ray, initialised: the cluster this process already joined, else ``address`` (None: a local one).

    Returns the module and whether this call started it (the caller then shuts it down).

    Raises:
        RunError: when the cluster cannot be started or joined.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise RunError(f"cannot start or join Ray at {address or 'a local cluster'}: {exc}") from None
    return ray, True


def check_endpoints(cfg: AppConfig, roles: Sequence[str]) -> dict[str, str]:
    """The HTTP base URL of every role a task calls; a ConfigError if one would use the embedded model.

    The embedded llama.cpp server lives in one process per machine; under Ray every worker would start
    its own, so scale-out requires served endpoints (vLLM, SGLang, a hosted API).
    """
    urls: dict[str, str] = {}
    for role in roles:
        url = cfg.llm.chat_base_url(role)  # type: ignore[arg-type]
        if not url:
            raise ConfigError(
                f"the ray executor needs an HTTP endpoint for role {role!r} (the embedded model is per machine); "
                "set llm.default.base_url, OPENAI_BASE_URL or a --models file"
            )
        urls[role] = url
    return urls


def task_config(cfg: AppConfig, slots: int, roles: Sequence[str]) -> AppConfig:
    """The config a task runs with: endpoints pinned and each endpoint's concurrency divided by ``slots``.

    The driver's ``OPENAI_BASE_URL`` is written into the config because workers on other nodes do not
    inherit the driver's environment. API keys are not: they stay in each node's environment variables.
    """
    urls = check_endpoints(cfg, roles)
    overrides = {role: dict(over) for role, over in cfg.llm.roles.items()}
    for role in dict.fromkeys((*roles, *SIDE_ROLES)):
        ep = cfg.llm.endpoint(role)  # type: ignore[arg-type]
        over = overrides.setdefault(role, {})  # type: ignore[arg-type]
        over["max_concurrency"] = max(1, ep.max_concurrency // slots)
        if role in urls and not ep.base_url:
            over["base_url"] = urls[role]
    out = cfg.model_copy(deep=True)
    out.llm.roles = overrides
    return out


def task_slots(cfg: AppConfig, n_units: int, limit: int | None, roles: Sequence[str]) -> int:
    """How many units run at once: the unit concurrency, capped so every endpoint keeps >= 1 permit."""
    slots = 1 if cfg.run.serial else (limit or cfg.run.user_concurrency)
    smallest = min(cfg.llm.endpoint(r).max_concurrency for r in roles)  # type: ignore[arg-type]
    return max(1, min(slots, smallest, n_units))


async def run_on_ray(fn: Callable[[Any], dict[str, Any]], tasks: Sequence[RemoteUnit], *, slots: int,
                     address: str | None, on_result: Callable[[RemoteUnit, dict[str, Any]], None],
                     on_lost: Callable[[RemoteUnit, Exception], None], on_done: Callable[[], None] = lambda: None,
                     poll: Callable[[], None] | None = None, init_kwargs: Mapping[str, Any] | None = None,
                     max_retries: int = 3, num_cpus: float = 1.0) -> None:
    """Run ``fn(task.job)`` as one Ray task per task, at most ``slots`` in flight; hand back each outcome.

    ``on_result`` gets what a task returned; ``on_lost`` the Ray error of a task out of retries (one unit's
    failure, never the run's); ``on_done`` is called as each task ends either way. ``poll``, when given, runs
    in a thread every second while the tasks run and once after they end (a watcher of the run directory).
    Ray is started here unless this process has joined a cluster already, and shut down again if so.
    """
    if not tasks:
        return
    ray, started = start_ray(address, init_kwargs or {})
    for module in loaded_plugin_modules():
        # A plug-in file's module has the name this process imported it under, which no task can import: its
        # code travels with each task instead (what it imports must still be importable where the task runs).
        ray.cloudpickle.register_pickle_by_value(module)
    remote = ray.remote(max_retries=max_retries, retry_exceptions=False, num_cpus=num_cpus)(fn)
    gate = asyncio.Semaphore(slots)

    async def one(task: RemoteUnit) -> None:
        async with gate:
            try:
                result = await remote.remote(task.job)
            except ray.exceptions.RayError as exc:
                on_lost(task, exc)
                return
            finally:
                on_done()
        on_result(task, result)

    poller = asyncio.create_task(poll_forever(poll)) if poll is not None else None
    try:
        await asyncio.gather(*(one(t) for t in tasks))
    finally:
        if poller is not None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
            poll()  # type: ignore[misc]
        if started:
            ray.shutdown()


@dataclass(frozen=True)
class UnitJob:
    """One unit for one Ray task (pickled to the worker)."""

    family: UnitFamily
    unit: Unit
    plan: AgentPlan
    pins: Mapping[str, Any]
    cfg: AppConfig
    root: Path
    models: ModelPins
    run_fields: Mapping[str, Any]
    make_client: Callable[[AppConfig], Any]
    #: The driver's call journal (its file and invocation) for worker processes on the driver's machine;
    #: None for Ray tasks, which report their usage when they end.
    journal: tuple[Path, str] | None = None


def run_unit_job(job: UnitJob) -> dict[str, Any]:
    """Play one unit to its end in this process; its usage and failures (none when it finished) as plain data."""


    async def go() -> dict[str, Any]:
        llm = job.make_client(job.cfg)
        llm.sample_seed = job.cfg.run.seed
        failures: list[dict[str, Any]] = []
        try:
            await job.models.hold(llm, "on this worker")
            failures = await play_failures(job.family, job.unit, job.plan, job.pins, llm, job.cfg,
                                           UnitRunDir(job.root), job.run_fields)
        finally:
            await llm.aclose()
            if llm.cache is not None:
                llm.cache.close()
        return {"usage": llm.ledger.to_dict(), "failures": failures}

    return asyncio.run(go())


async def play_on_ray(family: UnitFamily, units: list[Unit], plan: AgentPlan, pins: Mapping[str, Any],
                      cfg: AppConfig, root: Path, models: ModelPins, run_fields: Mapping[str, Any], *,
                      address: str | None, ledger: UsageLedger, make_client: Callable[[AppConfig], Any] | None = None,
                      on_done: Callable[[], None] = lambda: None, max_retries: int = 3, slots: int | None = None,
                      num_cpus: float = 1.0, init_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Play a unit family's ``units`` through :func:`run_on_ray` (at most ``slots`` at once, capped as
    :func:`task_slots` says); merge their usage into ``ledger``.

    Returns the failures (one per unit whose task failed for good, or whose play failed).
    """
    if not units:
        return []
    roles = plan.roles or ("agent",)
    slots = task_slots(cfg, len(units), slots, roles)
    tcfg = task_config(cfg, slots, roles)
    labels = {u.id: u.label for u in units}
    failures: list[dict[str, Any]] = []
    tasks = [RemoteUnit(u.id, UnitJob(family=family, unit=u, plan=plan, pins=pins, cfg=tcfg, root=root.resolve(),
                                   models=models, run_fields=run_fields, make_client=make_client or default_client))
             for u in units]

    def finished(task: RemoteUnit, result: dict[str, Any]) -> None:
        ledger.merge(UsageLedger.from_dict(result["usage"]))
        failures.extend(result["failures"])

    def lost(task: RemoteUnit, exc: Exception) -> None:
        lines = str(exc).strip().splitlines()
        failures.append({"user": task.unit, "stage": "ray_task", "label": labels[task.unit],
                         "error": redact(lines[-1] if lines else type(exc).__name__)})

    await run_on_ray(run_unit_job, tasks, slots=slots, address=address, on_result=finished, on_lost=lost,
                     on_done=on_done, max_retries=max_retries, num_cpus=num_cpus, init_kwargs=init_kwargs)
    return failures
