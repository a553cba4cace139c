"""Read run directories into typed records for reports, leaderboards and comparisons."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.ranking_flags import endpoint_flag, model_change_flag, with_flag
from ..engine.read import refuse_missing_trials, unique_labels
from ..engine.trials import is_trials_dir, trial_run_dirs
from ..errors import RunError
from ..families.statetrack.cut import recorded_environment
from ..families.statetrack.data.model import Environment
from ..families.statetrack.layout import RunDir
from ..families.statetrack.trials import pooled_metrics
from ..records import EvaluationRecord, Manifest, Metrics, as_dict, read_record


@dataclass(frozen=True)
class RunRecord:
    """One run directory's manifest and metrics, as written by the runner.

    Attributes:
        root: the run directory.
        label: a short unique name for tables and legends.
        manifest: the parsed ``manifest.json`` (of the first trial, for a ``--trials`` directory).
        metrics: the parsed ``metrics.json`` (pooled over trials, for a ``--trials`` directory).
        trials: the trial run directories when ``root`` is a ``--trials`` output, else empty.
    """

    root: Path
    label: str
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    trials: tuple[Path, ...] = ()

    @property
    def detail_root(self) -> Path:
        """Where per-user files are read (traces, evaluations): the first trial of a ``--trials`` run."""
        return self.trials[0] if self.trials else self.root

    @property
    def protocol(self) -> dict[str, Any]:
        """The manifest's protocol block (empty when absent)."""
        return dict(self.manifest.get("protocol") or {})

    @property
    def environment_sha256(self) -> str | None:
        """Hash of the environment the run was made on."""
        return self.protocol.get("environment_sha256")

    @property
    def agent(self) -> str:
        """The agent's name."""
        return str(self.metrics.get("agent") or (self.protocol.get("agent") or {}).get("name") or "?")

    @property
    def complete(self) -> bool:
        """Whether every (user, period) was evaluated."""
        return bool(self.metrics.get("complete"))

    @property
    def num_periods(self) -> int:
        """Periods in the run's environment."""
        return int(self.manifest.get("periods") or len(self.metrics.get("per_period") or []))

    @property
    def users(self) -> list[str]:
        """User ids of the run, in manifest order."""
        return [str(u) for u in self.manifest.get("users") or sorted(self.metrics.get("per_user") or {})]


def load_run(root: Path, label: str | None = None) -> RunRecord:
    """Read ``manifest.json`` and ``metrics.json`` of one run directory, validated against their models.

    Raises:
        RunError: the directory is not a run with metrics, a file has the wrong shape or format version, or the
            manifest's periods differ from the periods the metrics score.
    """
    root = Path(root)
    if not root.is_dir():
        raise RunError(f"{root}: no such run directory")
    if is_trials_dir(root):
        return _load_trials(root, label)
    rd = RunDir(root)
    manifest = as_dict(read_record(rd.manifest, Manifest))
    # A run resumed on another model carries the flag in every reader (board, compare, report), never ranked.
    metrics = with_flag(as_dict(read_record(rd.metrics, Metrics)), model_change_flag(manifest.get("model_changes")))
    metrics = with_flag(metrics, endpoint_flag(metrics.get("endpoint_problems")))
    scored = len(metrics.get("per_period") or [])
    if scored and manifest["periods"] != scored:
        raise RunError(f"{rd.manifest}: periods is {manifest['periods']} but metrics.json scores {scored} periods; "
                       "the manifest is damaged")
    return RunRecord(root=root, label=label or root.name, manifest=manifest, metrics=metrics)


def _load_trials(root: Path, label: str | None) -> RunRecord:
    """A ``--trials`` output as one record: the first trial's manifest and metrics pooled over all trials."""
    refuse_missing_trials(root)
    trials = [load_run(d) for d in trial_run_dirs(root)]
    first = trials[0]
    for t in trials[1:]:
        if t.environment_sha256 != first.environment_sha256 or t.agent != first.agent:
            raise RunError(f"{root}: {t.root.name} was run on another environment or agent than "
                           f"{first.root.name}; cannot pool the trials")
    seen: dict[Any, str] = {}
    for t in trials:
        seed = (t.manifest.get("config") or {}).get("run", {}).get("seed")
        if seed is not None and seen.setdefault(seed, t.root.name) != t.root.name:
            # A trial run again by hand under another trial's seed replays that trial from the cache.
            raise RunError(f"{root}: {seen[seed]} and {t.root.name} ran with the same seed {seed}, so they are one "
                           "sample, not two; cannot pool the trials")
    env, why = load_run_environment(first)
    if env is None:
        raise RunError(f"{root}: cannot pool the trials: {why}")
    metrics = pooled_metrics(env, [t.root for t in trials])
    metrics["agent"] = first.agent
    metrics = with_flag(metrics, model_change_flag([c for t in trials for c in t.manifest.get("model_changes") or []]))
    metrics = with_flag(metrics, endpoint_flag([p for t in trials for p in t.metrics.get("endpoint_problems") or []]))
    return RunRecord(root=root, label=label or root.name, manifest=first.manifest, metrics=metrics,
                     trials=tuple(t.root for t in trials))


def load_runs(roots: list[Path]) -> list[RunRecord]:
    """Load several runs with unique labels."""
    if not roots:
        raise RunError("give at least one run directory")
    return [load_run(r, lab) for r, lab in zip(roots, unique_labels([Path(r) for r in roots]), strict=True)]


def load_run_environment(run: RunRecord, override: Path | None = None) -> tuple[Environment | None, str | None]:
    """The environment a run was made on, or None with the reason it is not available (see
    :func:`~amemgym.families.statetrack.cut.recorded_environment`)."""
    return recorded_environment(run.manifest, override)


def answer_rule(run: RunRecord) -> str:
    """The answer rule the run's headline was scored under (``strict`` unless its settings say ``original``)."""
    return str((run.protocol.get("run") or {}).get("answer_rule") or "strict")


def eval_records(run: RunRecord, user: str) -> dict[int, dict[str, Any]]:
    """Evaluation files of one user, by period (missing periods are absent)."""
    rd = RunDir(run.detail_root)
    out: dict[int, dict[str, Any]] = {}
    for p in range(run.num_periods):
        path = rd.evaluation(user, p)
        if path.exists():
            out[p] = as_dict(read_record(path, EvaluationRecord))
    return out


def session_records(run: RunRecord, user: str) -> dict[tuple[int, int], dict[str, Any]]:
    """Recorded sessions of one user by (period, session); a redone session replaces the first record."""
    return RunDir(run.detail_root).session_records(user)
