"""Pure reshaping of metrics and evaluation records into what tables and figures draw."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..families.statetrack.metrics import FAILURE_GROUP, HEADLINE, answer_scores, result_flags
from ..scoring.registry import Metric, find, in_display_order, registered

#: The extra curve of self-evolution runs (memory factual recall per period), drawn after the registered ones.
RECALL_CURVE: tuple[str, str] = ("memory_recall", "Memory recall")


def failure_kinds() -> tuple[str, ...]:
    """The failure kinds of the diagnosis (write, read, utilization): the registered failure rates' keys."""
    return tuple(m.key for m in registered("pooled") if m.group == FAILURE_GROUP)


def curve_panels() -> tuple[tuple[str, str], ...]:
    """``(metric name, title)`` of every registered metric drawn per period, in drawing order."""
    return tuple((m.name, m.title) for m in in_display_order() if m.curve)


def signed(name: str) -> bool:
    """Whether a curve's values can leave [0, 1] (the memory score can go negative)."""
    m = find(name)
    return m is not None and not m.bounded


@dataclass(frozen=True)
class Stat:
    """A mean with an optional 95 % interval."""

    mean: float | None
    lo: float | None = None
    hi: float | None = None
    n: int = 0

    @classmethod
    def of(cls, d: Any) -> Stat:
        """From a metrics stat dict (``{mean, lo, hi, n}``); anything else is an empty stat."""
        if not isinstance(d, dict):
            return cls(None)
        return cls(_num(d.get("mean")), _num(d.get("lo")), _num(d.get("hi")), int(d.get("n") or 0))

    def text(self, digits: int = 3) -> str:
        """``0.203 [0.150, 0.256]``, or ``-`` when undefined."""
        if self.mean is None:
            return "-"
        if self.lo is None or self.hi is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or math.isnan(x):
        return None
    return float(x)


def fmt(x: float | None, digits: int = 3) -> str:
    """A number with fixed digits, or ``-``."""
    return "-" if x is None else f"{x:.{digits}f}"


@dataclass(frozen=True)
class RoleUsage:
    """Token and cost totals of one role."""

    role: str
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Summary:
    """The headline numbers of one run.

    Attributes:
        stats: every registered cell metric's overall mean and interval, by name.
        rates: every registered pooled metric's overall value, by name.
    """

    label: str
    agent: str
    stats: Mapping[str, Stat]
    rates: Mapping[str, float | None]
    users: int
    complete: bool
    wall_seconds: float | None
    usage: tuple[RoleUsage, ...] = field(default_factory=tuple)
    memory_recall: Stat = Stat(None)
    flags: tuple[str, ...] = ()
    excluded_cells: int | None = None
    total_cells: int | None = None
    simulator_turns: int | None = None
    simulator_degenerate: int | None = None

    def stat(self, name: str) -> Stat:
        """A cell metric's overall stat (empty when the run's metrics do not carry it)."""
        return self.stats.get(name) or Stat(None)

    @property
    def memory_score(self) -> Stat:
        """The headline metric's stat (the memory score)."""
        return self.stat(HEADLINE)

    def cell_text(self, m: Metric, digits: int = 3) -> str:
        """One metric as a table shows it: a cell metric with its interval, a pooled one as a number or %."""
        if m.level == "cell":
            return self.stat(m.name).text(digits)
        value = self.rates.get(m.name)
        if value is None:
            return "-"
        return f"{100 * value:.1f} %" if m.percent else f"{value:.{digits}f}"

    def value(self, m: Metric) -> float | None:
        """One metric's overall value: a cell metric's mean or a pooled metric's value."""
        return self.stat(m.name).mean if m.level == "cell" else self.rates.get(m.name)

    @property
    def degenerate(self) -> bool:
        """Whether the run carries a degeneracy flag (reported, never ranked)."""
        return bool(self.flags)

    def memory_text(self, digits: int = 3) -> str:
        """The memory score with its interval and, when some cells had no score, how many were excluded."""
        text = self.memory_score.text(digits)
        if self.total_cells and self.excluded_cells:
            text += f" ({self.excluded_cells}/{self.total_cells} cells excluded)"
        return text

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens over every role."""
        return sum(u.prompt_tokens + u.completion_tokens for u in self.usage)

    @property
    def total_cost(self) -> float:
        """Cost in USD over every role."""
        return sum(u.cost_usd for u in self.usage)


def usage_rows(metrics: dict[str, Any]) -> tuple[RoleUsage, ...]:
    """Per-role usage from ``metrics.usage.cumulative`` (the ``total`` entry is left out)."""
    cum = ((metrics.get("usage") or {}).get("cumulative")) or {}
    rows = []
    for role, d in sorted(cum.items()):
        if role == "total" or not isinstance(d, dict):
            continue
        rows.append(RoleUsage(role, int(d.get("calls") or 0), int(d.get("cache_hits") or 0),
                              int(d.get("prompt_tokens") or 0), int(d.get("completion_tokens") or 0),
                              float(d.get("cost_usd") or 0.0)))
    return tuple(rows)


def cell_counts(metrics: dict[str, Any]) -> tuple[int | None, int | None]:
    """(excluded, total) (user, period) cells of the memory score, recounted from ``per_user`` when absent."""
    ov = metrics.get("overall") or {}
    cells = ov.get("memory_cells")
    if isinstance(cells, dict) and isinstance(cells.get("total"), int):
        return int(cells.get("undefined") or 0), int(cells["total"])
    per_user = metrics.get("per_user")
    if not isinstance(per_user, dict):
        return None, None
    all_cells = [c for u in per_user.values() if isinstance(u, dict) for c in u.values() if isinstance(c, dict)]
    return sum(1 for c in all_cells if _num(c.get("memory_score")) is None), len(all_cells)


def degeneracy_flags(metrics: dict[str, Any]) -> tuple[str, ...]:
    """A run's degeneracy flags, recomputed from its numbers (so runs written before the flags get them too)."""
    ov = dict(metrics.get("overall") or {})
    excluded, total = cell_counts(metrics)
    if total is not None:
        ov["memory_cells"] = {"undefined": excluded, "defined": total - (excluded or 0), "total": total}
        ov["undefined_memory_cells"] = excluded
    flags = result_flags(ov, metrics.get("simulator") if isinstance(metrics.get("simulator"), dict) else None)
    recorded = [f for f in ov.get("flags") or [] if isinstance(f, str) and f not in flags]
    return tuple(flags + recorded)


def summarize(label: str, agent: str, metrics: dict[str, Any]) -> Summary:
    """The summary of one run's ``metrics.json``."""
    ov = metrics.get("overall") or {}
    excluded, total = cell_counts(metrics)
    return Summary(
        label=label, agent=agent, stats={m.name: Stat.of(ov.get(m.name)) for m in registered("cell")},
        rates={m.name: _num(m.read(ov)) for m in registered("pooled")},
        users=int(ov.get("users") or 0), complete=bool(metrics.get("complete")),
        wall_seconds=_num(metrics.get("wall_seconds_last_invocation")), usage=usage_rows(metrics),
        memory_recall=Stat.of(ov.get("memory_recall")), flags=degeneracy_flags(metrics),
        excluded_cells=excluded, total_cells=total,
        simulator_turns=_int((metrics.get("simulator") or {}).get("turns")),
        simulator_degenerate=_int((metrics.get("simulator") or {}).get("degenerate")),
    )


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def period_series(metrics: dict[str, Any], name: str) -> list[Stat]:
    """One curve (a registered metric's name, or ``memory_recall``) over periods."""
    rows = sorted(metrics.get("per_period") or [], key=lambda r: int(r.get("period", 0)))
    return [Stat.of(r.get(name)) for r in rows]


def failure_series(metrics: dict[str, Any]) -> dict[str, list[float | None]]:
    """Write, read and utilization rates over periods."""
    rows = sorted(metrics.get("per_period") or [], key=lambda r: int(r.get("period", 0)))
    return {m.key: [_num(m.read(r)) for r in rows] for m in registered("pooled") if m.group == FAILURE_GROUP}


@dataclass(frozen=True)
class Grid:
    """A labelled matrix for a heat map; ``None`` marks a missing cell.

    ``undefined`` (same shape, or empty) marks cells that were evaluated but have no value (a memory
    score with UB <= R), which a heat map draws differently from cells never evaluated.
    """

    rows: tuple[str, ...]
    cols: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    undefined: tuple[tuple[bool, ...], ...] = ()


def user_period_grid(metrics: dict[str, Any], users: list[str], num_periods: int,
                     key: str = "memory_score") -> Grid:
    """Users x periods of one per-cell metric from ``metrics.per_user``."""
    per_user = metrics.get("per_user") or {}
    values = []
    undefined = []
    for u in users:
        cells = per_user.get(u) or {}
        values.append(tuple(_num((cells.get(str(p)) or {}).get(key)) for p in range(num_periods)))
        undefined.append(tuple(isinstance(cells.get(str(p)), dict) and _num(cells[str(p)].get(key)) is None
                               for p in range(num_periods)))
    return Grid(tuple(users), tuple(f"P{p}" for p in range(num_periods)), tuple(values), tuple(undefined))


def question_period_grid(evals: dict[str, dict[int, dict[str, Any]]], num_periods: int,
                         rule: str = "strict") -> Grid:
    """(user, question) x periods accuracy from evaluation records (``evals[user][period]``), scored under the
    run's answer ``rule`` as its headline is."""
    rows: list[str] = []
    values: list[tuple[float | None, ...]] = []
    for user in evals:
        by_period = evals[user]
        questions = sorted({int(q["question"]) for rec in by_period.values() for q in rec.get("questions", [])})
        for qi in questions:
            row: list[float | None] = []
            for p in range(num_periods):
                rec = by_period.get(p) or {}
                hits = [answer_scores(q, rule)[0] for q in rec.get("questions", []) if int(q["question"]) == qi]
                row.append(hits[0] if hits else None)
            rows.append(f"{user} Q{qi}")
            values.append(tuple(row))
    return Grid(tuple(rows), tuple(f"P{p}" for p in range(num_periods)), tuple(values))
