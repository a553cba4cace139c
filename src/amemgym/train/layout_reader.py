"""Read the recorded sessions and evaluations of a run directory, per user, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..families.statetrack.finished import run_manifest
from ..records import EvaluationRecord, as_dict, read_record


@dataclass(frozen=True)
class RecordedSession:
    """One finished session of a run."""

    period: int
    session: int
    time: str | None
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class RecordedUser:
    """A user's recorded sessions (in order) and evaluation records (by period)."""

    id: str
    sessions: list[RecordedSession] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)


def read_run(root: Path) -> list[RecordedUser]:
    """Every user of the run in ``root``, in the manifest's order.

    Raises:
        RunError: when ``root`` is not a run directory or a file in it is unreadable.
    """
    rd, manifest = run_manifest(root)
    users: list[RecordedUser] = []
    for uid in manifest.users:
        latest = {key: RecordedSession(key[0], key[1], rec.get("time"), list(rec["messages"]))
                  for key, rec in rd.session_records(uid).items()}
        evals = []
        for p in range(manifest.periods):
            path = rd.evaluation(uid, p)
            if path.exists():
                evals.append(as_dict(read_record(path, EvaluationRecord)))
        users.append(RecordedUser(uid, [latest[k] for k in sorted(latest)], evals))
    return users
