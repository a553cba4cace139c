"""What a family provides to the engine: its units, how to plan and play one, and how to read its records.

A run of a *unit family* is a set of independent units (a budget episode; a toy family's puzzle), each
played sequentially inside and resumable from its own checkpoint. The engine owns everything around them
(the run directory, its lock and root files, preflight, models, usage, progress, failures, trials, pooling,
executors, reports); the family owns the protocol. A family module never writes into the run directory:
``play`` returns the unit's record and the engine writes it; state to resume from goes through the
:class:`~amemgym.engine.checkpoint.Checkpoint` the engine hands it. Every file lands through the engine's
:class:`~amemgym.engine.unit_writer.UnitWriter` (statetrack's episode hands its records to one directly).

:func:`check_unit_family` lists what an object lacks to be one.

A family that keeps its own runner (statetrack: users and periods, the simulator) still runs its units on the
engine's Ray executor: it hands :func:`amemgym.engine.ray.run_on_ray` one :class:`RemoteUnit` per unit and
the module-level function a worker plays it with.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rich.console import Console

    from ..config import AppConfig
    from ..llm.client import LLMClient
    from .checkpoint import Checkpoint

__all__ = ["AgentPlan", "RemoteUnit", "Unit", "UnitFamily", "UnitRow", "check_unit_family"]


@dataclass(frozen=True)
class Unit:
    """One unit of work of a run.

    Attributes:
        id: its folder relative to the run directory (``.`` when the run is this one unit); its record and
            checkpoint live there.
        path: its environment file.
        digest: the sha256 of that file (a resume refuses another file under the same id).
        group: what units are never averaged across (the budget tier).
        label: a readable name.
        info: what the manifest lists about it besides the above (the family's choice).
        data: the family's parsed unit (not written anywhere).
    """

    id: str
    path: Path
    digest: str
    group: str
    label: str
    info: Mapping[str, Any] = field(default_factory=dict)
    data: Any = None


@dataclass(frozen=True)
class AgentPlan:
    """What a family decided about an ``--agent`` before any write.

    Attributes:
        agent: the ``--agent`` name.
        roles: the model roles its units call (each is preflighted and its served model pinned).
        protocol: the family's settings a resume must match (recorded in the manifest).
        options: anything the family needs back in ``play`` (not recorded).
    """

    agent: str
    roles: tuple[str, ...]
    protocol: Mapping[str, Any] = field(default_factory=dict)
    options: Any = None


@dataclass(frozen=True)
class RemoteUnit:
    """One unit as a Ray task: its id (failures name it) and the picklable job the worker function receives."""

    unit: str
    job: Any


@dataclass(frozen=True)
class UnitRow:
    """One unit in a run's summary: the unit, its record when it finished, and what happened this time."""

    unit: Unit
    record: dict[str, Any] | None
    status: str


@runtime_checkable
class UnitFamily(Protocol):
    """The engine side of a family (``amemgym.engine.run_units`` drives it).

    Attributes:
        name: the registered family name (records carry it).
        noun: what a unit is called in messages (``episodes``).
    """

    name: str
    noun: str

    def units(self, env: Path, limit: int | None) -> list[Unit]:
        """The units of ``env`` (a file or a folder), the first ``limit`` of them; DataError for bad files."""
        ...

    def plan(self, agent: str, cfg: AppConfig, llm: LLMClient, first: Unit) -> AgentPlan:
        """Resolve ``agent`` (refusing, with ConfigError, one this family cannot run) without a model call."""
        ...

    async def pins(self, plan: AgentPlan, cfg: AppConfig, llm: LLMClient, pinned: Mapping[str, Any]) -> dict[str, Any]:
        """Choices a run makes once and every resume keeps (given the ones already ``pinned``); may call models."""
        ...

    async def play(self, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: LLMClient, cfg: AppConfig,
                   checkpoint: Checkpoint) -> dict[str, Any]:
        """Play (or resume from ``checkpoint``) one unit to its end and return its record (JSON-ready)."""
        ...

    def summary(self, console: Console, rows: list[UnitRow]) -> None:
        """The family's own lines of the run summary (the engine prints the per-group means and usage)."""
        ...


_METHODS = ("units", "plan", "pins", "play", "summary")


def check_unit_family(family: object) -> list[str]:
    """Why ``family`` cannot run on the engine (empty when it can): its name, noun and methods."""
    problems = []
    name = getattr(family, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        problems.append(f"name must be a lowercase identifier, got {name!r}")
    if not isinstance(getattr(family, "noun", None), str):
        problems.append("noun must be a string")
    for method in _METHODS:
        fn = getattr(family, method, None)
        if not callable(fn):
            problems.append(f"missing method {method}()")
        elif method in ("pins", "play") and not inspect.iscoroutinefunction(fn):
            problems.append(f"{method}() must be async")
    return problems
