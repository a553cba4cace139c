"""Statetrack's panel of ``--trials``: its registered cell metrics per trial, and metrics pooled over trials.

The trials loop, the trial folders and how readers recognise them are the engine's
(:mod:`amemgym.engine.trials`); the spread and pass^k are computed in :mod:`amemgym.engine.pool`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...engine.pool import pass_k, spread
from ...engine.unit_writer import UnitWriter
from ...llm.usage import UsageLedger
from ...records import Manifest, Metrics, as_dict, read_record
from ...runfiles import MANIFEST, METRICS, TRIALS
from ...scoring.registry import in_display_order
from .data.model import Environment
from .layout import RunDir
from .metrics import QuestionOutcome, aggregate
from .results import outcomes_of


def spread_names() -> tuple[str, ...]:
    """The metrics whose spread across trials is reported: the registered cell metrics that can vary."""
    return tuple(m.name for m in in_display_order("cell") if m.trials)


def trial_spread(dirs: list[Path]) -> dict[str, Any]:
    """Per-trial headline numbers and their mean and sample standard deviation across trials.

    Each trial row carries that trial's degeneracy ``flags`` and its ``differences_from_original`` (protocol
    settings that make it not comparable with published numbers), so a flagged trial is visible in the summary.
    Only complete trials enter the spread: an unfinished one's numbers cover the periods it reached, not the run
    (``unfinished`` lists them).
    """
    names = spread_names()
    rows: list[dict[str, Any]] = []
    for d in dirs:
        m = as_dict(read_record(d / METRICS, Metrics))
        settings = m.get("protocol_settings") or {}
        rows.append({"trial": d.name, "complete": m["complete"],
                     **{n: (m["overall"].get(n) or {}).get("mean") for n in names},
                     "flags": list((m.get("overall") or {}).get("flags") or []),
                     "differences_from_original": list(settings.get("differences_from_original") or [])})
    done = [r for r in rows if r["complete"] is True]
    return {"trials": rows, "spread": {n: spread([r[n] for r in done if r[n] is not None]) for n in names},
            "unfinished": [r["trial"] for r in rows if r["complete"] is not True]}


def write_trial_summary(out_dir: Path, dirs: list[Path]) -> dict[str, Any]:
    """Compute the spread and write ``out_dir/trials.json``."""
    summary = trial_spread(dirs)
    UnitWriter(out_dir).put_now(TRIALS, summary)
    return summary


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
    usage = UsageLedger()
    for d in dirs:
        trial = as_dict(read_record(d / METRICS, Metrics))
        flags += [f for f in (trial.get("overall") or {}).get("flags") or [] if f not in flags]
        # What the run cost is every trial's calls and tokens together, role by role.
        usage.merge(UsageLedger.from_dict(((trial.get("usage") or {}).get("cumulative")) or {}))
    metrics["usage"] = {"cumulative": usage.to_dict()}
    metrics["overall"]["flags"] = flags
    metrics["overall"]["degenerate"] = bool(flags)
    metrics["complete"] = not missing
    metrics["missing"] = missing
    metrics["trials"] = {
        **trial_spread(dirs),
        "k": len(dirs),
        "dirs": [d.name for d in dirs],
        "seeds": [as_dict(read_record(d / MANIFEST, Manifest)).get("config", {}).get("run", {}).get("seed")
                  for d in dirs],
        **pass_k(right, len(dirs)),
        "definitions": {
            "consistency": "pass^k: share of questions (user, period, question) answered correctly in all k trials",
            "spread": "mean and sample standard deviation of each trial's headline number",
        },
    }
    return metrics
