"""Playing one unit: on a view of the run's client that counts its own usage, from its checkpoint, to its
record in the run directory.

Every executor plays a unit through :func:`play_failures` (locally, in a worker process or in a Ray task), so
a unit is played and written the same way wherever it runs; :func:`play_file` plays one unit file without a
run directory around it (the Gym-style and Inspect uses).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agents.guard import set_call_limit
from ..config import AppConfig
from ..errors import AMemGymError, ConfigError, DataError, RunError
from ..llm.client import LLMClient
from ..llm.redact import redact
from ..llm.usage import UsageLedger
from .checkpoint import Checkpoint
from .contract import AgentPlan, Unit, UnitFailed, UnitFamily, default_finished, hook
from .rundir import UnitRunDir
from .usage import LiveUsage

__all__ = ["counted_view", "finished_record", "play_and_write", "play_failures", "play_file"]


def counted_view(llm: LLMClient) -> LLMClient:
    """The same client (backends, limiters, cache, in-flight calls) counting into its own ledger, so units share
    one limiter while each record reports its own usage."""
    view = copy.copy(llm)
    view.ledger = UsageLedger()
    view.embedder = llm.embedder  # type: ignore[method-assign]  # one embedding model for every unit
    return view


def _identity(family: str, unit: Unit, plan: AgentPlan) -> dict[str, str]:
    """Who writes a unit's checkpoint: the family, the unit's file, the agent and the plan's text settings."""
    return {"family": family, "digest": unit.digest, "agent": plan.agent,
            **{k: v for k, v in plan.protocol.items() if isinstance(v, str)}}


def finished_record(rd: UnitRunDir, unit: Unit, family: UnitFamily | None = None) -> dict[str, Any] | None:
    """A unit's record when it needs no more play under this run (None otherwise): the family's ``finished``
    hook, by default its ``results.json``.

    Raises:
        RunError: the unit's folder holds the record of another file.
    """
    finished = hook(family, "finished") if family is not None else default_finished
    return finished(unit, rd.root)  # type: ignore[no-any-return]


async def play_failures(family: UnitFamily, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: LLMClient,
                        cfg: AppConfig, rd: UnitRunDir, run_fields: Mapping[str, Any],
                        live: LiveUsage | None = None) -> list[dict[str, Any]]:
    """Play one unit on a view of ``llm`` and write its record; the failures to record (none when it finished).

    A :class:`UnitFailed` from the family gives its own entries; any other error is one entry naming the unit.

    Raises:
        ConfigError, DataError: bad input is one line and exit 2, not one failed unit among others.
    """
    try:
        await play_and_write(family, unit, plan, pins, llm, cfg, rd, run_fields, live)
    except (ConfigError, DataError):
        raise
    except UnitFailed as failed:
        return [{k: redact(v) if isinstance(v, str) else v for k, v in f.items()} for f in failed.failures]
    except AMemGymError as exc:
        return [{"user": unit.id, "stage": family.noun.rstrip("s"), "label": unit.label, "error": redact(str(exc))}]
    return []


async def play_and_write(family: UnitFamily, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: LLMClient,
                         cfg: AppConfig, rd: UnitRunDir, run_fields: Mapping[str, Any],
                         live: LiveUsage | None = None) -> dict[str, Any] | None:
    """Play one unit on a view of ``llm`` (its calls merged into ``llm``'s ledger at the end, and seen by ``live``
    meanwhile) and write its record; a ``play`` that returns None wrote its files already, and what its family's
    ``finished`` hook reads back is returned."""
    # Plug-in calls keep the run's limit in whatever process or task plays the unit (worker processes and Ray
    # tasks start from a fresh context).
    set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)
    view = counted_view(llm)
    checkpoint = Checkpoint(rd.unit_dir(unit.id), _identity(family.name, unit, plan), run_dir=rd.root,
                            ledger=view.ledger)
    try:
        with live.unit(view.ledger) if live is not None else contextlib.nullcontext(view.ledger):
            record = await family.play(unit, plan, pins, view, cfg, checkpoint)
    except AMemGymError:
        checkpoint.keep_usage()
        raise
    finally:
        llm.ledger.merge(view.ledger)
    if record is None:
        return finished_record(rd, unit, family)
    # Every invocation that played the unit (the earlier ones up to their last checkpoint), not only this one.
    full = {**record, "family": family.name, "unit": unit.id, "group": unit.group, "label": unit.label,
            "usage": checkpoint.usage().to_dict(), **run_fields}
    if checkpoint.discarded is not None:
        full["checkpoint_discarded"] = checkpoint.discarded  # the record says it was played over, and why
    rd.write_record(unit.id, full)
    return rd.record(unit.id) or full


async def play_file(family: UnitFamily, env: Path, agent: str, out_dir: Path, llm: LLMClient,
                    cfg: AppConfig) -> dict[str, Any]:
    """Play (or resume) the one unit file ``env`` into ``out_dir`` without a run directory around it (no lock,
    manifest or usage files): a Gym-style or test use. Returns the record written to ``out_dir``.

    Raises:
        AMemGymError: whatever the unit's play raised.
    """
    (unit,) = family.units(env, None)
    set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)
    plan = family.plan(agent, cfg, llm, unit)
    pins = await family.pins(plan, cfg, llm, {})
    record = await play_and_write(family, unit, plan, pins, llm, cfg, UnitRunDir(out_dir), {"run_seed": cfg.run.seed})
    if record is None:
        raise RunError(f"{out_dir}: {unit.label} was played but its family reads no finished record back")
    return record
