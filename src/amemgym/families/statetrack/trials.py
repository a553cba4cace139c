"""Repeated runs: the spread between trials that differ only in their seed."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...engine.pool import pass_k
from ...records import Manifest, Metrics, as_dict, read_record
from ...scoring.metrics import QuestionOutcome, aggregate
from ...scoring.registry import in_display_order
from ...storage import atomic_write_json
from .data.model import Environment
from .layout import RunDir
from .results import outcomes_of


def spread_names() -> tuple[str, ...]:
    """The metrics whose spread across trials is reported: the registered cell metrics that can vary."""
    return tuple(m.name for m in in_display_order("cell") if m.trials)


def trial_dirs(out_dir: Path, trials: int) -> list[Path]:
    """``out_dir/trial_1`` .. ``trial_N``."""
    return [out_dir / f"trial_{k}" for k in range(1, trials + 1)]


def trial_spread(dirs: list[Path]) -> dict[str, Any]:
    """Per-trial headline numbers and their mean and sample standard deviation across trials.

    Each trial row carries that trial's degeneracy ``flags`` and its ``differences_from_original`` (protocol
    settings that make it not comparable with published numbers), so a flagged trial is visible in the summary.
    """
    names = spread_names()
    rows: list[dict[str, Any]] = []
    for d in dirs:
        m = as_dict(read_record(d / "metrics.json", Metrics))
        settings = m.get("protocol_settings") or {}
        rows.append({"trial": d.name, "complete": m["complete"],
                     **{n: (m["overall"].get(n) or {}).get("mean") for n in names},
                     "flags": list((m.get("overall") or {}).get("flags") or []),
                     "differences_from_original": list(settings.get("differences_from_original") or [])})
    spread: dict[str, Any] = {}
    for n in names:
        xs = [r[n] for r in rows if r[n] is not None]
        spread[n] = {"mean": statistics.fmean(xs) if xs else None,
                     "std": statistics.stdev(xs) if len(xs) > 1 else None, "n": len(xs)}
    return {"trials": rows, "spread": spread}


def write_trial_summary(out_dir: Path, dirs: list[Path]) -> dict[str, Any]:
    """Compute the spread and write ``out_dir/trials.json``."""
    summary = trial_spread(dirs)
    atomic_write_json(out_dir / "trials.json", summary)
    return summary


def trial_run_dirs(root: Path) -> list[Path]:
    """The ``trial_N`` run directories under a ``--trials`` output, in trial order (empty if it is not one)."""
    found = []
    for d in root.glob("trial_*"):
        suffix = d.name.removeprefix("trial_")
        if d.is_dir() and suffix.isdigit() and (d / "manifest.json").exists():
            found.append((int(suffix), d))
    return [d for _, d in sorted(found)]


def is_trials_dir(root: Path) -> bool:
    """Whether ``root`` holds ``--trials`` output (trial folders, no run of its own)."""
    return not (root / "manifest.json").exists() and bool(trial_run_dirs(root))


def pooled_metrics(env: Environment, dirs: list[Path]) -> dict[str, Any]:
    """Metrics pooled over trials of one run, plus the spread between trials and their consistency.

    Each user stays one sampling unit: a (user, period) cell averages its questions over every trial, so
    intervals are still over users. The write/read diagnosis is made within each trial (a fact counts as
    stored only if that same trial's earlier probe found it). ``trials.consistency`` is pass^k: the share of
    questions asked in all k trials that were answered correctly in all k; ``trials.pass_at_1`` is the
    mean single-trial accuracy over the same questions.
    """
    outcomes: list[QuestionOutcome] = []
    missing: list[dict[str, Any]] = []
    right: dict[tuple[str, int, int], list[bool]] = {}
    stride = 1 + max((len(u.qas) for u in env.users), default=0)
    for k, d in enumerate(dirs):
        rd = RunDir(d)
        for user in env.users:
            outs, recs = outcomes_of(user, rd)
            done = {r["period"] for r in recs}
            missing += [{"trial": d.name, "user": user.id, "period": p}
                        for p in range(len(user.periods)) if p not in done]
            for o in outs:
                right.setdefault((o.user, o.period, o.question), []).append(o.score >= 1.0)
                # A question id per trial keeps the diagnosis from linking one trial's probe to another's.
                outcomes.append(replace(o, question=o.question + k * stride))
    metrics = aggregate(outcomes, env.num_periods)
    # A trial flagged degenerate (e.g. by its simulator audit, which pooling cannot redo) keeps the pool flagged.
    flags = list(metrics["overall"].get("flags") or [])
    for d in dirs:
        trial = as_dict(read_record(d / "metrics.json", Metrics))
        flags += [f for f in (trial.get("overall") or {}).get("flags") or [] if f not in flags]
    metrics["overall"]["flags"] = flags
    metrics["overall"]["degenerate"] = bool(flags)
    metrics["complete"] = not missing
    metrics["missing"] = missing
    metrics["trials"] = {
        **trial_spread(dirs),
        "k": len(dirs),
        "dirs": [d.name for d in dirs],
        "seeds": [as_dict(read_record(d / "manifest.json", Manifest)).get("config", {}).get("run", {}).get("seed")
                  for d in dirs],
        **pass_k(right, len(dirs)),
        "definitions": {
            "consistency": "pass^k: share of questions (user, period, question) answered correctly in all k trials",
            "spread": "mean and sample standard deviation of each trial's headline number",
        },
    }
    return metrics
