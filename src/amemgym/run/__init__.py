"""Running agents on environments: episodes, snapshots, resume, results."""

from .engine import Runner, RunOutcome

__all__ = ["RunOutcome", "Runner"]
