"""Whether a statetrack run's records are complete: what every reader that must not work on half a run
(``export``, ``audit-sim``) checks before it reads."""

from __future__ import annotations

from pathlib import Path

from ...engine.trials import trial_run_dirs
from ...errors import RunError
from ...records import Manifest, Metrics, as_dict, read_record
from .cut import recorded_environment
from .layout import RunDir
from .resume import refuse_lost_sessions

__all__ = ["check_planned", "refuse_unfinished", "run_manifest"]


def refuse_unfinished(rundir: Path, then: str = "export") -> None:
    """Refuse a run that has not finished: training data from half a run is not the run's (as the budget
    family refuses an episode without ``results.json``), nor is an audit of half its turns. ``then`` names
    what to do once it has finished.

    Raises:
        RunError: ``metrics.json`` is missing, damaged (naming what is wrong) or says the run is incomplete.
    """
    path = RunDir(rundir).metrics
    complete = False
    if path.exists():
        complete = bool(as_dict(read_record(path, Metrics)).get("complete"))
    if not complete:
        raise RunError(f"{rundir}: the run has not finished (no complete metrics.json); re-run the same amemgym run "
                       f"command to finish it, then {then}")


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
