"""Read the recorded sessions and evaluations of a run directory, per user, in order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..run.layout import RunDir
from ..storage import read_jsonl


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


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{path}: unreadable ({exc})") from None


def read_run(root: Path) -> list[RecordedUser]:
    """Every user of the run in ``root``, in the manifest's order.

    Raises:
        RunError: when ``root`` is not a run directory or a file in it is unreadable.
    """
    rd = RunDir(root)
    if not rd.manifest.exists():
        raise RunError(f"{root}: not a run directory (no manifest.json)")
    manifest = _load(rd.manifest)
    users: list[RecordedUser] = []
    for uid in manifest.get("users") or []:
        # A session redone after a kill is appended again: the last record wins, as in the runner.
        latest: dict[tuple[int, int], RecordedSession] = {}
        for rec in read_jsonl(rd.sessions(uid)):
            key = (int(rec["period"]), int(rec["session"]))
            latest[key] = RecordedSession(key[0], key[1], rec.get("time"), list(rec["messages"]))
        evals = []
        for p in range(int(manifest.get("periods") or 0)):
            path = rd.evaluation(uid, p)
            if path.exists():
                evals.append(_load(path))
        users.append(RecordedUser(uid, [latest[k] for k in sorted(latest)], evals))
    return users
