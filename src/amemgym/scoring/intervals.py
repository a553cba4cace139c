"""Interval helpers every family's scores use (docs/design.md §5): the mean and its Student-t 95 % interval.

They take plain numbers and return plain numbers; what a number means is the family's business (the
state-tracking metrics live in :mod:`amemgym.families.statetrack.metrics`, the budget family's in
:mod:`amemgym.families.budget.metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy.special import stdtrit


def t95(dof: int) -> float:
    """The two-sided 95 % Student t quantile for ``dof`` degrees of freedom (exact for any dof >= 1).

    Raises:
        ValueError: if ``dof`` < 1.
    """
    if dof < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {dof}")
    # stdtrit is the inverse of Student's t CDF that scipy.stats.t.ppf itself calls (the same value for every
    # dof; tested), without importing scipy.stats, which costs every run process about half a second.
    return float(stdtrit(dof, 0.975))


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, None for no values."""
    return sum(values) / len(values) if values else None


def mean_ci(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean with a 95 % t-interval over the given (independent) values."""
    n = len(values)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    m = sum(values) / n
    if n == 1:
        return {"mean": m, "lo": None, "hi": None, "n": 1}
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    half = t95(n - 1) * math.sqrt(var / n)
    return {"mean": m, "lo": m - half, "hi": m + half, "n": n}


def share_ci(values: Sequence[float]) -> dict[str, float | int | None]:
    """:func:`mean_ci` of values that live in [0, 1] (accuracies, rates, recall), its interval clipped to it: a
    t-interval over few values can reach past either end."""
    ci = mean_ci(values)
    if ci["lo"] is not None and ci["hi"] is not None:
        ci["lo"], ci["hi"] = max(0.0, float(ci["lo"])), min(1.0, float(ci["hi"]))
    return ci
