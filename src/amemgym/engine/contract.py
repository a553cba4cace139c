"""What a family provides to the engine: its units, how to plan and play one, and how to read its records.

A run of a *unit family* is a set of independent units (a budget episode; a toy family's puzzle), each
played sequentially inside and resumable from its own checkpoint. The engine owns everything around them
(the run directory, its lock and root files, preflight, models, usage, progress, failures, trials, pooling,
executors, reports); the family owns the protocol. A family module never writes into the run directory:
``play`` returns the unit's record and the engine writes it; state to resume from goes through the
:class:`~amemgym.engine.checkpoint.Checkpoint` the engine hands it. Every file lands through the engine's
:class:`~amemgym.engine.unit_writer.UnitWriter` (statetrack's episode hands its records to one directly).

:func:`check_unit_family` lists what an object lacks to be one.

Besides the five required members a family may define *optional hooks* (:data:`HOOKS`); one it leaves out
gets the engine's default, which is what the budget and toy families use. Statetrack defines them all
(``families/statetrack/units.py``):

- ``protocol(plan, cfg)``: what a resume must match, recorded in the manifest; by default the agent, the run
  seed and the plan's ``protocol``.
- ``check_resume(old, protocol, root)``: accept (and return) the manifest of an earlier invocation, or refuse
  it with RunError; by default every key of this run's protocol must match the recorded one. It may be called
  before the run lock is taken, so it changes nothing.
- ``adopt(old, units, root)``: under the run lock, bring an earlier invocation's directory up to this version
  (statetrack renames user folders named before names were one-to-one) and return its manifest; by default
  nothing changes.
- ``manifest(base, old, units, plan, cfg)``: the manifest to write, given the engine's ``base`` (family,
  planned units, protocol, config, pinned models and their changes, pins); by default ``base`` itself. A
  family whose manifest has its own shape says so with a ``manifest_record`` class attribute (the record type
  it is validated as; :class:`~amemgym.records.UnitManifest` by default), and likewise ``metrics_record``.
- ``finished(unit, root)``: the record of a unit that needs no more play (None otherwise); by default its
  ``results.json``, refused when it holds another file's results. A family whose units leave several files
  instead of one record (statetrack's sessions and evaluations) says from them when one is done.
- ``run_metrics(units, root, found, cfg)``: the family's numbers of ``metrics.json`` over the run; by default
  every registered unit metric per unit and per group (:func:`amemgym.engine.metrics.unit_run_metrics`). The
  engine adds the agent, cumulative usage, endpoint problems, wall time and failures.
- ``executor(opts, cfg, units)``: an :class:`~amemgym.engine.executor.UnitExecutor` of the family's own to play
  the run's units, or None (the default) for the engine's choice: ``--executor``, then ``run.workers``.
- ``progress(units, root)``: the live display of the family's own (an object with the ``start``, ``unit_done``
  and ``close`` of :class:`~amemgym.engine.progress.UnitProgress`, which may also count what happens inside a
  unit, such as statetrack's sessions and evaluations read from ``root``), or None (the default) for the
  engine's line of units done.
- ``run_summary(console, root, outcome)``: the console summary after a run, from its
  :class:`~amemgym.engine.runner.RunOutcome`; by default the unit table, the family's ``summary`` lines, the
  means per group and the usage (:func:`amemgym.engine.summary.print_run_summary`).

``play`` may also return None (the unit wrote its files through the engine's UnitWriter, and ``finished``
reads them back), and may raise :class:`UnitFailed` to report its own failure entries (statetrack's name the
period and stage) instead of the one entry the engine makes from any other error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import AMemGymError, RunError
from .metrics import unit_run_metrics
from .rundir import UnitRunDir
from .summary import print_run_summary

if TYPE_CHECKING:
    from rich.console import Console

    from ..config import AppConfig
    from ..llm.client import LLMClient
    from .checkpoint import Checkpoint
    from .pool import Found
    from .runner import RunOutcome

__all__ = ["HOOKS", "AgentPlan", "RemoteUnit", "Unit", "UnitFailed", "UnitFamily", "UnitRow", "check_unit_family",
           "hook"]


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
        options: anything the family needs back in ``play`` (not recorded; pickled to every worker, so small).
        pinned: the roles whose served model the run pins (empty: ``roles``).
        plugin: the agent is code we do not control: its units play in a worker process, never in the driver,
            so whatever it does to its process (ends it, leaves a thread running) does not decide the run's end.
    """

    agent: str
    roles: tuple[str, ...]
    protocol: Mapping[str, Any] = field(default_factory=dict)
    options: Any = None
    pinned: tuple[str, ...] = ()
    plugin: bool = False


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
                   checkpoint: Checkpoint) -> dict[str, Any] | None:
        """Play (or resume from ``checkpoint``) one unit to its end and return its record (JSON-ready), or None
        when the unit's files are written already (its ``finished`` hook reads them back).

        Raises:
            UnitFailed: the unit failed, with the failure entries the family wants recorded.
            AMemGymError: the unit failed (the engine records one entry naming the unit).
        """
        ...

    def summary(self, console: Console, rows: list[UnitRow]) -> None:
        """The family's own lines of the run summary (the engine prints the per-group means and usage)."""
        ...


_METHODS = ("units", "plan", "pins", "play", "summary")


class UnitFailed(AMemGymError):
    """Raised by ``play`` when a unit failed, carrying the failure entries to record for it.

    Each entry is a JSON-ready dict with at least ``user`` (the unit's id) and ``error``; the family may add its
    own fields (statetrack's ``period`` and ``stage``). The engine redacts them and writes them as given.
    """

    def __init__(self, failures: Sequence[Mapping[str, Any]]) -> None:
        self.failures = [dict(f) for f in failures]
        super().__init__(str(self.failures[0].get("error", "failed")) if self.failures else "failed")


def default_check_resume(old: Mapping[str, Any], protocol: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The engine's resume check: every setting of this run's ``protocol`` the earlier manifest ``old`` records
    must be the same.

    Raises:
        RunError: a recorded setting differs (named in the message).
    """
    before = old.get("protocol") or {}
    for key, value in protocol.items():
        if key in before and before[key] != value:
            raise RunError(f"{root}: holds a run with {key.replace('_', ' ')} {before[key]!r}, now {value!r}; "
                           "refusing to mix results (use a new --out directory)")
    return dict(old)


def default_protocol(plan: AgentPlan, cfg: AppConfig) -> dict[str, Any]:
    """The agent, the run seed and the plan's settings."""
    return {"agent": plan.agent, "run_seed": cfg.run.seed, **plan.protocol}


def default_adopt(old: Mapping[str, Any], units: Sequence[Unit], root: Path) -> dict[str, Any]:
    """Nothing to bring up to date."""
    return dict(old)


def default_manifest(base: Mapping[str, Any], old: Mapping[str, Any] | None, units: Sequence[Unit], plan: AgentPlan,
                     cfg: AppConfig) -> dict[str, Any]:
    """The engine's manifest as it is."""
    return dict(base)


def default_finished(unit: Unit, root: Path) -> dict[str, Any] | None:
    """A unit's ``results.json`` when it finished under this run (None otherwise).

    Raises:
        RunError: the unit's folder holds the record of another file.
    """
    rd = UnitRunDir(root)
    record = rd.record(unit.id)
    if record is None:
        return None
    if record.get("environment_sha256") != unit.digest:
        raise RunError(f"{rd.unit_dir(unit.id)} holds the results of another file than {unit.path}; use a new --out")
    return record


def default_executor(opts: Any, cfg: AppConfig, units: Sequence[Unit]) -> None:
    """No executor of the family's own: the engine's local or Ray executor, as ``--executor`` says."""
    return None


def default_progress(units: Sequence[Unit], root: Path) -> None:
    """No display of the family's own: the engine's :class:`~amemgym.engine.progress.UnitProgress`."""
    return None


def _default_run_metrics(name: str) -> Callable[..., dict[str, Any]]:
    def run_metrics(units: Sequence[Unit], root: Path, found: Sequence[Found], cfg: AppConfig) -> dict[str, Any]:
        """Every registered unit metric per unit and per group (``units`` planned in the manifest order)."""
        manifest = UnitRunDir(root).manifest() or {}
        return unit_run_metrics(name, found, [u["id"] for u in manifest.get("units") or []])

    return run_metrics


def _default_run_summary(family: UnitFamily) -> Callable[..., None]:
    def run_summary(console: Console, root: Path, outcome: RunOutcome) -> None:
        """The unit table, the family's lines, the means per group and the usage."""
        print_run_summary(console, family, root, outcome.rows, outcome.found, outcome.usage, outcome.seconds)

    return run_summary


#: The optional hooks a family may define, each with the engine's default.
HOOKS: dict[str, Callable[[UnitFamily], Callable[..., Any]]] = {
    "protocol": lambda family: default_protocol,
    "check_resume": lambda family: default_check_resume,
    "adopt": lambda family: default_adopt,
    "manifest": lambda family: default_manifest,
    "finished": lambda family: default_finished,
    "run_metrics": lambda family: _default_run_metrics(family.name),
    "executor": lambda family: default_executor,
    "progress": lambda family: default_progress,
    "run_summary": _default_run_summary,
}


def hook(family: UnitFamily, name: str) -> Callable[..., Any]:
    """The family's optional hook ``name`` (one of :data:`HOOKS`), or the engine's default when it has none."""
    fn = getattr(family, name, None)
    return fn if callable(fn) else HOOKS[name](family)


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
    for name in HOOKS:
        fn = getattr(family, name, None)
        if fn is None:
            continue
        if not callable(fn):
            problems.append(f"optional hook {name} must be a method")
        elif inspect.iscoroutinefunction(fn):
            problems.append(f"optional hook {name}() must not be async")
    return problems
