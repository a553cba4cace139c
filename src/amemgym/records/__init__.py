"""Typed, versioned models of every file in a run directory, and the one way to read them.

One module per record family: :mod:`.manifest`, :mod:`.session` (``sessions.jsonl``), :mod:`.evaluation`
(period evaluations and upper bound), :mod:`.results` (metrics, usage, failures) and :mod:`.checkpoint`
(resume state and period snapshots), :mod:`.evolve` (self-evolution cycles). See :mod:`.base` for
versioning and migration.
"""

from .base import RUN_FORMAT_VERSION, UNVERSIONED, RunFile, as_dict, parse_record, read_record, versioned
from .checkpoint import Snapshot, State
from .evaluation import EvaluationRecord, QuestionResult, UpperBoundAnswer, UpperBoundRecord
from .evolve import EvolutionCycle
from .manifest import Manifest
from .results import Failure, FailuresFile, Metrics, PendingUsage, UsageFile
from .session import Message, SessionRecord

__all__ = [
    "RUN_FORMAT_VERSION", "UNVERSIONED", "EvaluationRecord", "EvolutionCycle", "Failure", "FailuresFile",
    "Manifest", "Message", "Metrics", "PendingUsage", "QuestionResult", "RunFile", "SessionRecord", "Snapshot", "State",
    "UpperBoundAnswer", "UpperBoundRecord", "UsageFile", "as_dict", "parse_record", "read_record", "versioned",
]
