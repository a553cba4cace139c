"""Optional artefacts a run directory may hold, in the shape the report shows them.

- ``RUNDIR/sim_audit.json`` (``amemgym audit-sim``): the rate of each simulator check;
- ``resimulated`` / ``unresolved_leaks`` in session records (``run.resimulate_leaks``): the leak guard's counts;
- ``users/<id>/evolution/period_XX.json`` (self-evolution): the memory policy of each cycle.

The pure functions take parsed JSON; the readers return None (with a note) for an absent or unreadable
file, because a report must still render without them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..families.statetrack.layout import RunDir
from ..runfiles import SIM_AUDIT
from .aggregate import Stat, _num, period_series
from .load import RunRecord

#: The audit's checks in display order; checks the file carries beyond these are appended.
AUDIT_ORDER: tuple[str, ...] = (
    "reveals_value", "ends_conversation", "empty", "copies_opening", "echoes_assistant", "near_echo",
    "repeats_user_turn",
    "judge_reveals_value", "judge_contradicts_state", "judge_ends_conversation",
)


@dataclass(frozen=True)
class AuditSummary:
    """The per-check rates of one run's simulator audit.

    Attributes:
        turns: simulator turns checked.
        judged: turns the judge scored (None when the audit ran without a judge).
        judge_failures: turns whose judge call failed.
        rates: ``(check, rate)`` in display order; a rate is None when nothing was checked.
    """

    turns: int
    judged: int | None
    judge_failures: int
    rates: tuple[tuple[str, float | None], ...]


def audit_summary(data: Any) -> AuditSummary | None:
    """The summary of a parsed ``sim_audit.json``, or None when it does not have the audit's shape."""
    if not isinstance(data, dict) or not isinstance(data.get("rates"), dict):
        return None
    rates: dict[str, Any] = data["rates"]
    order = [c for c in AUDIT_ORDER if c in rates] + sorted(c for c in rates if c not in AUDIT_ORDER)
    judged = data.get("judged")
    return AuditSummary(
        turns=int(data.get("turns") or 0),
        judged=int(judged) if isinstance(judged, int) and not isinstance(judged, bool) else None,
        judge_failures=int(data.get("judge_failures") or 0),
        rates=tuple((c, _num(rates[c])) for c in order),
    )


@dataclass(frozen=True)
class LeakGuard:
    """What the simulator's leak guard did over a run's recorded sessions.

    Attributes:
        sessions: session records read.
        resimulated: extra simulator draws made because a turn leaked a value.
        unresolved: turns that kept leaking and were replaced by the neutral follow-up.
    """

    sessions: int
    resimulated: int
    unresolved: int


def leak_guard(records: Iterable[Mapping[str, Any]]) -> LeakGuard:
    """Sum the guard's counts over session records (a record without them counts zero)."""
    sessions = resimulated = unresolved = 0
    for rec in records:
        sessions += 1
        resimulated += _count(rec.get("resimulated"))
        unresolved += _count(rec.get("unresolved_leaks"))
    return LeakGuard(sessions, resimulated, unresolved)


def _count(x: Any) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) and x > 0 else 0


def recall_stat(metrics: Mapping[str, Any]) -> Stat:
    """Overall memory recall of an evolution run (an empty stat for other runs)."""
    return Stat.of((metrics.get("overall") or {}).get("memory_recall"))


def has_recall(metrics: Mapping[str, Any]) -> bool:
    """Whether the metrics carry memory recall (self-evolution runs with a judge)."""
    return recall_stat(metrics).mean is not None or any(
        s.mean is not None for s in period_series(dict(metrics), "memory_recall"))


def evolution_view(record: Any) -> dict[str, Any] | None:
    """The browser's view of one evolution cycle record, or None when it is not one.

    Every text is passed through as a string; the page shows it with ``textContent``.
    """
    if not isinstance(record, dict) or "policy" not in record:
        return None
    raw_recall, raw_changes = record.get("recall"), record.get("changes")
    recall: dict[str, Any] = raw_recall if isinstance(raw_recall, dict) else {}
    changes: list[Any] = raw_changes if isinstance(raw_changes, list) else []
    return {
        "feedback_kind": _text(record.get("feedback_kind")),
        "policy_version": record.get("policy_version"),
        "policy": _text(record.get("policy")),
        "status": _text(record.get("status")),
        "reason": _text(record.get("reason")),
        "changes": [str(c) for c in changes],
        "next_policy_version": record.get("next_policy_version"),
        "next_policy": _text(record.get("next_policy")),
        "recall": _num(recall.get("recall")),
        "supported": recall.get("supported"),
        "revealed": recall.get("revealed"),
    }


def _text(x: Any) -> str | None:
    return None if x is None else str(x)


def _read_optional(path: Path) -> tuple[Any, str | None]:
    if not path.exists():
        return None, None
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), None
    except (OSError, json.JSONDecodeError) as exc:
        return None, f"{path.name} unreadable ({exc})"


def read_sim_audit(run: RunRecord) -> tuple[AuditSummary | None, str | None]:
    """The run's simulator audit, or None; the second item says why a present file was not used."""
    data, problem = _read_optional(run.root / SIM_AUDIT)
    if problem or data is None:
        return None, problem
    summary = audit_summary(data)
    return summary, None if summary else "sim_audit.json does not have the audit's shape"


def read_evolution(run: RunRecord, user: str) -> dict[int, dict[str, Any]]:
    """Views of one user's evolution cycles by period (absent or unreadable records are left out)."""
    out: dict[int, dict[str, Any]] = {}
    folder = RunDir(run.detail_root).user(user) / "evolution"
    for p in range(run.num_periods):
        data, _ = _read_optional(folder / f"period_{p:02d}.json")
        view = evolution_view(data)
        if view is not None:
            out[p] = view
    return out
