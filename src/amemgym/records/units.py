"""The root files of a run whose work comes in units (a family on :mod:`amemgym.engine`'s contract).

``manifest.json`` (:class:`UnitManifest`) and ``metrics.json`` (:class:`UnitMetrics`) of such a run carry the
family's name, so a reader knows which model to read them with (:func:`run_family`); ``usage.json`` and
``failures.json`` are the statetrack run's records (:mod:`.results`), shared as they are. Each unit's own record
(``<unit>/results.json`` for the budget family) and its checkpoint (:class:`UnitCheckpoint`) sit in the unit's
folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ..runfiles import MANIFEST
from .base import RunFile


class PlannedUnit(BaseModel):
    """One unit a run planned: its folder (relative to the run directory), file digest, group and label."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str
    sha256: str
    group: str
    label: str


class UnitManifest(RunFile):
    """What a unit-family run is: its family, planned units, protocol, models and pins (no secrets).

    Attributes:
        family: the family's registered name.
        amemgym_version: the package version that created the run.
        environment_file: the ``--env`` path as given.
        units: every unit planned so far (a resume may add units, never drop one).
        protocol: what a resume must match (agent, run seed and the family's settings).
        config: the full configuration (secrets excluded).
        models: per role the family calls, the model the endpoint answered with (``served``).
        model_changes: model changes a resume was allowed to make (``--allow-model-change``).
        pins: choices made once and kept by every resume (the budget family's tool protocol).
    """

    kind: ClassVar[str] = "manifest"

    family: str
    amemgym_version: str
    python: str | None = None
    created: str | None = None
    environment_file: str | None = None
    units: list[PlannedUnit] = Field(default_factory=list)
    protocol: dict[str, Any]
    config: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    model_changes: list[dict[str, Any]] = Field(default_factory=list)
    pins: dict[str, Any] = Field(default_factory=dict)


class UnitMetrics(RunFile):
    """Every number of a unit-family run: per unit and, per group, the mean over units with its interval.

    ``groups`` maps a group (the budget tier) to ``{metric: {mean, lo, hi, n}}``: units of different groups are
    never averaged together. ``definitions`` says how each metric is computed (from the metric registry).
    """

    kind: ClassVar[str] = "metrics"

    family: str
    agent: str | None = None
    per_unit: dict[str, dict[str, Any]] = Field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: A JSON boolean only: ``"yes"`` or ``1`` is refused, not read as true.
    complete: bool = Field(strict=True)
    missing: list[str] = Field(default_factory=list)
    definitions: dict[str, str] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    failures: list[dict[str, Any]] = Field(default_factory=list)


class UnitRecord(RunFile):
    """One finished unit's record (``<unit>/results.json``): what the family's ``play`` returned, plus the run
    fields the engine adds (``unit``, ``run_seed``, ``agent_model``, ``model_changes``).

    Attributes:
        family: the family that played it.
        environment_sha256: the digest of the unit's file (two runs of one unit share it).
        agent: the ``--agent`` it was played by.
        results_version: the family's own version of the record's content (ranked runs must share it).
    """

    kind: ClassVar[str] = "unit results"

    family: str
    environment_sha256: str
    agent: str
    results_version: int = 1
    run_seed: int | None = None
    agent_model: str | None = None

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Before run-file versions, a budget ``results.json`` carried its content version as ``format_version``
        (the reader hands it over as ``results_version``)."""
        return raw


class UnitCheckpoint(RunFile):
    """Where a unit resumes: who wrote it (``identity`` must match) and the family's state after the last step."""

    kind: ClassVar[str] = "checkpoint"

    identity: dict[str, str]
    state: dict[str, Any]
    #: The unit's usage over every invocation that played it, up to this save (a ledger's ``to_dict()``).
    usage: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Format 1 (the budget harness's) was one flat object: identity keys beside the state."""
        if not isinstance(raw, dict) or "identity" in raw:
            return raw
        ids = ("digest", "policy", "agent")
        return {"identity": {k: str(raw[k]) for k in ids if raw.get(k) is not None},
                "state": {k: v for k, v in raw.items() if k not in ids}}


def run_family(root: Path) -> str | None:
    """The family ``root/manifest.json`` names; None when it names none (a statetrack run) or is missing."""
    return peek_family(Path(root) / MANIFEST)


def peek_family(path: Path) -> str | None:
    """The ``family`` key at the top level of the JSON file ``path``, without validating the rest (None when
    absent, not a string, or the file is missing, not a regular file or unreadable); its reader validates it."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("family") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
