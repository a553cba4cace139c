"""Typed, versioned models of every file in a run directory, and the one way to read them.

One module per record family: :mod:`.manifest`, :mod:`.session` (``sessions.jsonl``), :mod:`.evaluation`
(period evaluations and upper bound), :mod:`.results` (metrics, usage, failures) and :mod:`.checkpoint`
(resume state and period snapshots), :mod:`.evolve` (self-evolution cycles), :mod:`.units` (the root
files, unit records and checkpoints of a family run on :mod:`amemgym.engine`), :mod:`.budget` (a budget
episode's record). See :mod:`.base` for versioning and migration.
"""

from pydantic import BaseModel

from . import base, budget, checkpoint, evaluation, evolve, manifest, results, session, units
from .base import RUN_FORMAT_VERSION, UNVERSIONED, RunFile, as_dict, parse_record, read_record, versioned
from .budget import parse_unit_record
from .checkpoint import Snapshot, State
from .evaluation import EvaluationRecord, QuestionResult, UpperBoundAnswer, UpperBoundRecord
from .evolve import EvolutionCycle
from .manifest import Manifest
from .results import Failure, FailuresFile, Metrics, PendingUsage, UsageFile
from .session import Message, SessionRecord
from .units import (
    PlannedUnit,
    UnitCheckpoint,
    UnitManifest,
    UnitMetrics,
    UnitRecord,
    run_family,
)

__all__ = [
    "RUN_FORMAT_VERSION", "UNVERSIONED", "EvaluationRecord", "EvolutionCycle", "Failure", "FailuresFile",
    "Manifest", "Message", "Metrics", "PendingUsage", "QuestionResult", "RunFile", "SessionRecord", "Snapshot", "State",
    "PlannedUnit", "UnitCheckpoint", "UnitManifest", "UnitMetrics", "UnitRecord", "UpperBoundAnswer",
    "UpperBoundRecord", "UsageFile", "as_dict", "build_models", "parse_record", "parse_unit_record", "read_record",
    "run_family", "versioned",
]


def build_models() -> None:
    """Build the validators of every record model now rather than on first use (pydantic's deferred build).

    A run calls this in a worker thread while it waits on the network, so that reading its files at the end
    does not pay for it; pydantic serialises concurrent builds of one model.
    """
    for module in (base, budget, checkpoint, evaluation, evolve, manifest, results, session, units):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                obj.model_rebuild()
