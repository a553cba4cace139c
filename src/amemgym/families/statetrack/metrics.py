"""The state-tracking family's metrics (docs/design.md §5): scores, the normalised memory score, diagnosis.

Everything here takes plain records and returns plain numbers, so it is tested on hand-made inputs. The
built-in metrics register here, with the decorator of :mod:`amemgym.scoring.registry` a new metric uses;
the interval helpers every family shares are in :mod:`amemgym.scoring.intervals`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...scoring.intervals import mean, mean_ci, share_ci
from ...scoring.registry import Metric, Row, metric, ratio, registered, show_first

__all__ = ["FAILURE_GROUP", "HEADLINE", "RESULT_FLAGS", "Cell", "QuestionOutcome", "aggregate", "diagnose",
           "mean", "mean_ci", "memory_score", "original_memory_aggregation", "pooled_block", "result_flags"]

#: The group of the write/read/utilization failure rates (the report's diagnosis bars draw its members).
FAILURE_GROUP = "failure_rates"
#: The metric the leaderboard ranks by and the report leads with (its interval and excluded cells shown).
HEADLINE = "memory_score"


@dataclass(frozen=True)
class QuestionOutcome:
    """One scored question at one period for one user.

    Attributes:
        score: 1.0 if the chosen option's combination is the current one, else 0.0 (invalid replies score 0).
        n_choices: options offered (the random baseline is 1/n).
        ub_score: the bare model's score with the state given (None if that call failed).
        probe: per required variable, whether the state probe named the current value.
        changed_at: per required variable, the latest period <= this one whose updates changed it.
    """

    user: str
    period: int
    question: int
    score: float
    n_choices: int
    ub_score: float | None
    probe: dict[str, bool] = field(default_factory=dict)
    changed_at: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Cell:
    """The scored questions of one user at one period, with their write/read/utilization diagnosis.

    A ``cell`` or ``count`` metric of the registry takes one.

    Attributes:
        user: the user id.
        period: the period index.
        outcomes: the cell's scored questions (at least one).
        diagnosis: per question index, ``{"variables": {var: "ok" | "write" | "read"}, "utilization": bool}``.
    """

    user: str
    period: int
    outcomes: tuple[QuestionOutcome, ...]
    diagnosis: Mapping[int, Mapping[str, Any]]


#: An upper bound less than this far above random leaves (O - R) / (UB - R) dominated by noise.
UB_GAP_MIN = 0.1
#: Above this share of (user, period) cells without a defined memory score, the mean says little.
UNDEFINED_SHARE_MAX = 0.5
#: Why a result is degenerate, by flag; a degenerate run is reported but never ranked.
RESULT_FLAGS: dict[str, str] = {
    "upper bound near random": f"the upper bound is less than {UB_GAP_MIN} above random: the model cannot use the "
                               "state even when told, so the memory score is noise",
    "memory score mostly undefined": f"more than {UNDEFINED_SHARE_MAX:.0%} of (user, period) cells have UB <= R "
                                     "and no memory score",
    "simulator degenerate": "more than 20 % of simulated user turns are empty, copies, echoes or repeats",
}


def result_flags(overall: dict[str, Any], simulator: dict[str, Any] | None = None) -> list[str]:
    """The degeneracy flags (keys of ``RESULT_FLAGS``) of a run's ``overall`` metrics block.

    Works on metrics written before the flags existed: it needs only the stat means and, when present,
    the undefined-cell count and the simulator summary.
    """
    flags: list[str] = []

    def m(name: str) -> float | None:
        v = (overall.get(name) or {}).get("mean") if isinstance(overall.get(name), dict) else None
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    ub, rnd = m("upper_bound"), m("random")
    if ub is not None and rnd is not None and ub - rnd < UB_GAP_MIN:
        flags.append("upper bound near random")
    cells = overall.get("memory_cells")
    undefined = overall.get("undefined_memory_cells")
    total = cells.get("total") if isinstance(cells, dict) else None
    if isinstance(undefined, int) and isinstance(total, int) and total and undefined / total > UNDEFINED_SHARE_MAX:
        flags.append("memory score mostly undefined")
    elif isinstance(undefined, int) and undefined and m("memory_score") is None:
        flags.append("memory score mostly undefined")
    if simulator and simulator.get("warn"):
        flags.append("simulator degenerate")
    return flags


def answer_scores(q: dict[str, Any], answer_rule: str = "strict") -> tuple[float, float | None]:
    """One evaluation record question's score and upper-bound score under ``answer_rule``: the strict one (an
    invalid reply is wrong) or the original release's (``score_original_rule``; records written before that
    field carried only the random draw, and records without either predate both rules)."""
    score, ub = float(q["score"]), q.get("ub_score")
    if answer_rule == "original":
        value = q.get("score_original_rule", q.get("score_with_random_fallback"))
        score = score if value is None else float(value)
        ub = q.get("ub_score_original_rule", ub)
    return score, None if ub is None else float(ub)


def memory_score(overall: float, random_: float, upper: float) -> float | None:
    """(O - R) / (UB - R); None when UB <= R (the normalisation is undefined there)."""
    denom = upper - random_
    if denom <= 1e-12:
        return None
    return (overall - random_) / denom


def original_memory_aggregation(cells: Sequence[tuple[float, float, float]]) -> float | str | None:
    """The original release's memory score: the plain mean of (O - R) / (UB - R) over (O, R, UB) cells.

    There is no guard, as in the original's array arithmetic: a cell with UB == R is +-inf (or nan when
    O == R too) and turns the mean into inf or nan; a cell with UB < R counts with its (sign-flipped) ratio.
    Non-finite results are returned as the strings ``"inf"``, ``"-inf"`` or ``"nan"`` so that they survive
    JSON; None when there are no cells.
    """
    if not cells:
        return None
    vals = []
    for o, r, ub in cells:
        num, den = o - r, ub - r
        if abs(den) <= 1e-12:
            vals.append(math.nan if abs(num) <= 1e-12 else math.copysign(math.inf, num))
        else:
            vals.append(num / den)
    m = sum(vals) / len(vals)
    return m if math.isfinite(m) else ("nan" if math.isnan(m) else ("inf" if m > 0 else "-inf"))


# The plain accuracies need no entry in metrics.json's definitions (define=False), whose keys readers rely on.
@metric("overall", "share of questions answered right", define=False)
def overall_score(cell: Cell) -> float | None:
    """O: the share of the cell's questions answered right."""
    return mean([r.score for r in cell.outcomes]) or 0.0


@metric("random", "expected share right when choosing uniformly at random", define=False, higher_is_better=None,
        trials=False)
def random_score(cell: Cell) -> float | None:
    """R: the mean of 1 / (options offered) over the cell's questions."""
    return mean([1.0 / r.n_choices for r in cell.outcomes]) or 0.0


@metric("upper_bound", "share right when the bare model is told the current state", short="UB", define=False)
def upper_bound_score(cell: Cell) -> float | None:
    """UB: the bare model's share right with the state given; None if any of its answers is missing."""
    ubs = [r.ub_score for r in cell.outcomes if r.ub_score is not None]
    return mean(ubs) if len(ubs) == len(cell.outcomes) else None


@metric(HEADLINE,
        "amemgym's aggregation: (O - R) / (UB - R) per (user, period), each term averaged over questions first; "
        "undefined cells (UB <= R) are excluded and counted in undefined_memory_cells; the headline is the mean "
        "over users of each user's mean", bounded=False, headline=True)
def memory_score_cell(cell: Cell) -> float | None:
    """(O - R) / (UB - R) of the cell; None without an upper bound or when UB <= R."""
    ub = upper_bound_score(cell)
    return memory_score(overall_score(cell) or 0.0, random_score(cell) or 0.0, ub) if ub is not None else None


def _diagnoses(cell: Cell) -> list[Mapping[str, Any]]:
    # One entry per scored question, in the cell's order.
    return [cell.diagnosis[o.question] for o in cell.outcomes]


def _labels(cell: Cell, kind: str) -> int:
    return sum(1 for d in _diagnoses(cell) for lab in d["variables"].values() if lab == kind)


@metric("questions", "questions scored in the cell", level="count", define=False)
def question_count(cell: Cell) -> int:
    """The cell's scored questions."""
    return len(cell.outcomes)


@metric("write_failures", "probe items wrong because the fact was never stored", level="count", define=False)
def write_failures(cell: Cell) -> int:
    """(question, required variable) items diagnosed as write failures."""
    return _labels(cell, "write")


@metric("read_failures", "probe items wrong although an earlier probe had the fact", level="count", define=False)
def read_failures(cell: Cell) -> int:
    """(question, required variable) items diagnosed as read failures."""
    return _labels(cell, "read")


@metric("utilization_failures", "questions answered wrongly with every required variable probed right",
        level="count", define=False)
def utilization_failures(cell: Cell) -> int:
    """Questions diagnosed as utilization failures."""
    return sum(1 for d in _diagnoses(cell) if d["utilization"])


@metric("probe_items", "(question, required variable) items the probe was asked about", level="count",
        define=False)
def probe_items(cell: Cell) -> int:
    """The cell's (question, required variable) probe items."""
    return sum(len(d["variables"]) for d in _diagnoses(cell))


@metric("memory_score_all_cells", "amemgym's guarded cells pooled: mean over every defined (user, period) cell",
        level="run", bounded=False)
def memory_score_all_cells(rows: Sequence[Row]) -> float | None:
    """The plain mean of every defined memory-score cell (users with more defined cells weigh more)."""
    return mean([r["memory_score"] for r in rows if r["memory_score"] is not None])


@metric("memory_score_original", "the original release's aggregation: mean of (O - R) / (UB - R) over all "
        "(user, period) cells with no guard; a UB == R cell makes it 'inf', '-inf' or 'nan' (written as a string), "
        "and UB < R cells count with their ratio", level="run", bounded=False)
def memory_score_original(rows: Sequence[Row]) -> float | str | None:
    """:func:`original_memory_aggregation` over the cells that have an upper bound."""
    return original_memory_aggregation([(r["overall"], r["random"], r["upper_bound"]) for r in rows
                                        if r["upper_bound"] is not None])


ratio("write_rate", "write failures / (question, required variable) probe items", "write_failures", "probe_items",
      label="write", higher_is_better=False, percent=True, group=FAILURE_GROUP, key="write")
ratio("read_rate", "read failures / (question, required variable) probe items", "read_failures", "probe_items",
      label="read", higher_is_better=False, percent=True, group=FAILURE_GROUP, key="read")
ratio("utilization_rate", "questions answered wrongly with every required variable probed right / questions",
      "utilization_failures", "questions", label="utilization", short="util", higher_is_better=False,
      percent=True, group=FAILURE_GROUP, key="utilization")


def diagnose(outcomes: Iterable[QuestionOutcome]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Write / read / utilization attribution per (user, period, question).

    For each required variable the probe got wrong at period p, let w be the latest period <= p whose
    updates changed it. If the probe of the same question was wrong at w too (or w == p), the fact was
    never stored: a *write* failure. Otherwise it was stored and later lost or not retrieved: a *read*
    failure. A question answered wrongly while every required variable was probed right is a
    *utilization* failure.
    """
    by_key = {(o.user, o.period, o.question): o for o in outcomes}
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for key, o in by_key.items():
        labels: dict[str, str] = {}
        for var, ok in o.probe.items():
            if ok:
                labels[var] = "ok"
                continue
            w = o.changed_at.get(var, 0)
            earlier = by_key.get((o.user, w, o.question))
            if w == o.period or earlier is None or not earlier.probe.get(var, False):
                labels[var] = "write"
            else:
                labels[var] = "read"
        all_right = bool(o.probe) and all(o.probe.values())
        out[key] = {"variables": labels, "utilization": all_right and o.score < 1.0}
    return out


def pooled_block(rows: Sequence[Row]) -> dict[str, Any]:
    """Every pooled metric over ``rows`` (per-cell rows), a grouped one under its group's key."""
    block: dict[str, Any] = {}
    for m in registered("pooled"):
        value = m.fn(rows)
        if m.group is None:
            block[m.key] = value
        else:
            block.setdefault(m.group, {})[m.key] = value
    return block


def aggregate(outcomes: list[QuestionOutcome], num_periods: int) -> dict[str, Any]:
    """Every registered metric per (user, period), per period and overall, with 95 % CIs over users.

    The levels of :mod:`amemgym.scoring.registry` decide where each goes; ``users``, the memory-score cell
    counts and the degeneracy flags are bookkeeping written beside them.
    """
    per_cell_metrics = [m for m in registered() if m.level in ("cell", "count")]
    means = registered("cell")
    diag = diagnose(outcomes)
    cells: dict[tuple[str, int], list[QuestionOutcome]] = defaultdict(list)
    for o in outcomes:
        cells[(o.user, o.period)].append(o)
    users = sorted({o.user for o in outcomes})

    per_cell: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for (user, period), rows in sorted(cells.items()):
        cell = Cell(user, period, tuple(rows), {r.question: diag[(user, period, r.question)] for r in rows})
        per_cell[user][period] = {m.name: m.fn(cell) for m in per_cell_metrics}

    def stat(m: Metric, period: int | None = None) -> dict[str, Any]:
        # Each user contributes one value (its mean over the selected periods): users are the sampling unit.
        vals = []
        for u in users:
            cells_u = [c for p, c in per_cell[u].items() if period is None or p == period]
            xs = [c[m.name] for c in cells_u if c[m.name] is not None]
            if xs:
                vals.append(sum(xs) / len(xs))
        return share_ci(vals) if m.bounded else mean_ci(vals)

    def rows_of(period: int | None = None) -> list[dict[str, Any]]:
        return [c for u in users for p, c in per_cell[u].items() if period is None or p == period]

    per_period = []
    for p in range(num_periods):
        per_period.append({"period": p, **{m.name: stat(m, p) for m in means}, **pooled_block(rows_of(p))})
    all_rows = rows_of()
    undefined = sum(1 for c in all_rows if c["memory_score"] is None)
    overall: dict[str, Any] = {m.name: stat(m) for m in means} | {
        m.name: m.fn(all_rows) for m in registered("run")} | pooled_block(all_rows) | {
        "users": len(users), "undefined_memory_cells": undefined,
        "memory_cells": {"defined": len(all_rows) - undefined, "undefined": undefined, "total": len(all_rows)},
    }
    overall["flags"] = result_flags(overall)
    overall["degenerate"] = bool(overall["flags"])
    return {
        "overall": overall,
        "per_period": per_period,
        "per_user": {u: {str(p): c for p, c in sorted(per_cell[u].items())} for u in users},
        "definitions": {
            **{m.name: m.description for m in registered() if m.define and m.level != "pooled"},
            "ci": "95 % t-interval over users (each user's mean over the selected periods)",
            **{m.name: m.description for m in registered("pooled") if m.define},
            "flags": "why the result is degenerate (reported, never ranked): " + "; ".join(
                f"{k}: {v}" for k, v in RESULT_FLAGS.items()),
        },
    }


# The summaries and reports show the headline quantities first, in this order; the rest follow as registered.
show_first("overall", "upper_bound", "random", HEADLINE)
