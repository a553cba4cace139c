"""The names of a run directory's files, spelled once for every module that writes, reads or protects them.

The layouts are described in :mod:`amemgym.engine.rundir` (unit families) and
:mod:`amemgym.families.statetrack.layout` (statetrack runs); both share these root files.
"""

from __future__ import annotations

__all__ = [
    "FAILURES", "LOCK", "MANIFEST", "METRICS", "READER_FILES", "REPORT", "ROOT_FILES", "SIM_AUDIT", "TRIALS",
    "UNIT_RECORD", "USAGE", "USAGE_JOURNAL", "USAGE_PENDING",
]

MANIFEST = "manifest.json"
METRICS = "metrics.json"
USAGE = "usage.json"
USAGE_PENDING = "usage.pending.json"
USAGE_JOURNAL = "usage.journal"
FAILURES = "failures.json"
LOCK = ".amemgym.lock"
#: The summary a ``--trials`` output keeps beside its ``trial_<k>`` runs.
TRIALS = "trials.json"
#: A finished unit's record, in the unit's own folder.
UNIT_RECORD = "results.json"
REPORT = "report.html"
SIM_AUDIT = "sim_audit.json"

#: The root files that only the run itself writes (a missing one may still be written later).
ROOT_FILES = frozenset({MANIFEST, METRICS, USAGE, USAGE_PENDING, USAGE_JOURNAL, FAILURES, LOCK})
#: What a reader command (report, audit-sim) writes inside a run directory, and may write again.
READER_FILES = frozenset({REPORT, SIM_AUDIT})
