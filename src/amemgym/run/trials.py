"""Repeated runs: the spread between trials that differ only in their seed."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from ..records import Metrics, read_record
from ..storage import atomic_write_json

_NAMES = ("overall", "upper_bound", "memory_score")


def trial_dirs(out_dir: Path, trials: int) -> list[Path]:
    """``out_dir/trial_1`` .. ``trial_N``."""
    return [out_dir / f"trial_{k}" for k in range(1, trials + 1)]


def trial_spread(dirs: list[Path]) -> dict[str, Any]:
    """Per-trial headline numbers and their mean and sample standard deviation across trials."""
    rows: list[dict[str, Any]] = []
    for d in dirs:
        m = read_record(d / "metrics.json", Metrics)
        rows.append({"trial": d.name, "complete": m.complete,
                     **{n: getattr(m.overall, n).mean for n in _NAMES}})
    spread: dict[str, Any] = {}
    for n in _NAMES:
        xs = [r[n] for r in rows if r[n] is not None]
        spread[n] = {"mean": statistics.fmean(xs) if xs else None,
                     "std": statistics.stdev(xs) if len(xs) > 1 else None, "n": len(xs)}
    return {"trials": rows, "spread": spread}


def write_trial_summary(out_dir: Path, dirs: list[Path]) -> dict[str, Any]:
    """Compute the spread and write ``out_dir/trials.json``."""
    summary = trial_spread(dirs)
    atomic_write_json(out_dir / "trials.json", summary)
    return summary
