"""Read the recorded sessions and evaluations of a run directory, per user, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.trials import trial_run_dirs
from ..errors import RunError
from ..families.statetrack.cut import recorded_environment
from ..families.statetrack.episode import refuse_lost_sessions
from ..families.statetrack.layout import RunDir
from ..records import EvaluationRecord, Manifest, as_dict, read_record


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


def run_manifest(root: Path) -> tuple[RunDir, Manifest]:
    """The run directory at ``root`` and its manifest.

    Raises:
        RunError: ``root`` is not a run directory (a ``--trials`` output is named as one), or the manifest is
            unreadable.
    """
    rd = RunDir(root)
    if not rd.manifest.exists():
        trials = trial_run_dirs(root) if Path(root).is_dir() else []
        if trials:
            raise RunError(f"{root}: a --trials output, not one run; pass one of its trials, e.g. {trials[0]}")
        raise RunError(f"{root}: not a run directory (no manifest.json)")
    return rd, read_record(rd.manifest, Manifest)


def check_planned(root: Path) -> str | None:
    """Refuse a run missing records its manifest plans: a user's folder, a period's evaluation, or (checked
    against the run's environment when its file is at hand) a played session. Returns why the sessions could
    not be counted (None when they were).

    Raises:
        RunError: naming the first missing record, or a manifest whose periods differ from the environment's.
    """
    rd, manifest = run_manifest(root)
    env, why = recorded_environment(as_dict(manifest))
    if env is not None and env.num_periods != manifest.periods:
        raise RunError(f"{rd.manifest}: periods is {manifest.periods} but the run's environment has "
                       f"{env.num_periods}; the manifest is damaged")
    for uid in manifest.users:
        if not rd.user(uid).is_dir():
            raise RunError(f"{rd.user(uid)}: missing; the manifest plans user {uid!r}, so the run's records are "
                           "incomplete")
        for p in range(manifest.periods):
            if not rd.evaluation(uid, p).exists():
                raise RunError(f"{rd.evaluation(uid, p)}: missing; the run's records are incomplete")
    if env is not None:
        for user in env.users:
            refuse_lost_sessions(rd, user, (len(user.periods), 0), "the run's records are incomplete")
    return why
