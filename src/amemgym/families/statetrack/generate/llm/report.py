"""The generation report: per-step usage and acceptance, per-user check pass rates, failures."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .....config import EnvConfig
from .base import Limits, Stats, StepStats, merge_stats, stats_to_dict

if TYPE_CHECKING:
    from .pipeline import UserRun


def check_rates(stats: Stats, step: str) -> dict[str, Any]:
    """Pass rates of a check step (``answers.reflection`` or ``utterances.exposure``)."""
    s = stats.get(step, StepStats())
    return {
        "checked": s.units,
        "first_try": s.first_try,
        "after_refinement": s.after_retry,
        "failed": s.failed,
        "first_try_pass_rate": round(s.first_try / s.units, 4) if s.units else None,
        "pass_rate": round((s.first_try + s.after_retry) / s.units, 4) if s.units else None,
    }


def _user_entry(run: UserRun) -> dict[str, Any]:
    total = StepStats()
    for s in run.stats.values():
        total.merge(s)
    entry: dict[str, Any] = {"id": run.user_id, "name": run.name, "status": "ok" if run.failure is None else "failed"}
    if run.failure is not None:
        entry["step"] = run.failure.step
        entry["reason"] = run.failure.reason
    entry.update({
        "resumed_stages": list(run.resumed),
        "calls": total.calls,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "exposure_check": check_rates(run.stats, "utterances.exposure"),
        "answer_reflection": check_rates(run.stats, "answers.reflection"),
        "unverified": list(run.unverified),
        "steps": stats_to_dict(run.stats),
    })
    return entry


def build_report(
    cfg: EnvConfig, seed: int, limits: Limits, runs: list[UserRun], usage: dict[str, Any], data_path: Path | None
) -> dict[str, Any]:
    """The JSON-ready generation report.

    ``steps`` and the per-user figures cover the whole generation, including stages loaded from
    checkpoints of earlier runs; ``usage_this_run`` is what this process spent on the generator role.
    Under non-strict checks, an answer or utterance that never passed its check is kept and listed in its
    user's ``unverified``; ``unverified_items`` counts them over the users that were written.
    Step counters: ``calls`` (cache hits included, as ``cache_hits``), tokens, and per unit of work
    ``first_try`` / ``after_retry`` (after showing the error or refining) / ``failed``.
    """
    steps: Stats = {}
    for run in runs:
        merge_stats(steps, run.stats)
    failures = [
        {"user_id": r.failure.user_id, "name": r.failure.name, "step": r.failure.step, "reason": r.failure.reason}
        for r in runs if r.failure is not None
    ]
    ok = sum(1 for r in runs if r.failure is None)
    return {
        "generator": "llm",
        "config": cfg.model_dump(),
        "seed": seed,
        "limits": asdict(limits),
        "users_requested": len(runs),
        "users_ok": ok,
        "users_failed": len(failures),
        "complete": not failures,
        "data_file": data_path.name if data_path else None,
        "failures": failures,
        "steps": stats_to_dict(steps),
        "exposure_check": check_rates(steps, "utterances.exposure"),
        "answer_reflection": check_rates(steps, "answers.reflection"),
        "unverified_items": sum(len(r.unverified) for r in runs if r.failure is None),
        "users": [_user_entry(r) for r in runs],
        "usage_this_run": usage,
    }
