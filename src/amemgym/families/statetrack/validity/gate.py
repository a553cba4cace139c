"""The statistics of the validity gate: a strategy's excess over its baseline, with a lower bound that
respects clustered answers and the number of tests made (docs/design.md §8).

Every strategy is scored per item (user, period, question) by its exact expected accuracy ``a`` and
compared with a baseline's expected accuracy ``b`` on the same item (uniform random, or the honest
recency reader for window strategies). The excess is the mean over users of each user's mean ``a - b``.

Two lower bounds are computed at the level asked for (Bonferroni-corrected by the caller) and the smaller
is used:

- a t-interval over users of each user's mean difference (over (user, question) clusters when there is
  a single user);
- a Wilson bound of the accuracy whose sample size is the effective one of answers clustered by (user,
  question) (cluster-robust variance), minus the baseline. It keeps a t-interval that collapses because a
  few users happen to score alike from failing a file on its own, and the clustering keeps repeated
  answers to one question from looking like independent evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

#: Error rate of a pooled test, and family-wise error rate of the per-period layer.
ALPHA = 0.05


@dataclass(frozen=True)
class GateStat:
    """One test: a strategy on a set of items against its baseline.

    Attributes:
        accuracy: mean over users of each user's mean expected accuracy.
        baseline: the same for the baseline.
        excess: ``accuracy - baseline``.
        lo, hi: the corrected t-interval of the accuracy (baseline + interval of the excess).
        gate_lo: the lower bound the decision uses (the smaller of the two, in accuracy units).
        answers: items scored.
    """

    accuracy: float
    baseline: float
    excess: float
    lo: float | None
    hi: float | None
    gate_lo: float | None
    answers: int


def quantile(alpha: float, df: int | None = None) -> float:
    """Two-sided critical value at level ``alpha`` (normal, or Student's t with ``df`` degrees of freedom)."""
    p = 1 - alpha / 2
    # The inverse CDFs that scipy.stats' norm.ppf and t.ppf call, so the values are the same (scoring/intervals.py).
    return float(ndtri(p) if df is None else stdtrit(df, p))


def wilson_lo(p: float, n: float, z: float) -> float:
    """Lower end of the Wilson score interval of a proportion ``p`` with (possibly effective) size ``n``."""
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z**2 / (4 * n * n))) / denom
    return max(0.0, centre - half)


def effective_size(a: np.ndarray, cluster: np.ndarray) -> tuple[float, int]:
    """The effective sample size of the pooled accuracy of clustered answers, and the number of clusters.

    Kept between the number of clusters (every cluster one answer) and the number of answers (no clustering).
    """
    n = len(a)
    ids, inv = np.unique(cluster, return_inverse=True)
    c = len(ids)
    p = float(a.mean())
    if c < 2 or p <= 0.0 or p >= 1.0:
        return float(c), c
    resid = np.bincount(inv, weights=a - p, minlength=c)
    var = c / (c - 1) * float(resid @ resid) / n**2
    return (min(float(n), max(float(c), p * (1 - p) / var)) if var > 0 else float(n)), c


def gate_stat(a: np.ndarray, b: np.ndarray, user: np.ndarray, cluster: np.ndarray, alpha: float) -> GateStat:
    """Test ``a`` against ``b`` on one set of items (parallel arrays; ``cluster`` ids (user, question) pairs)."""
    d = a - b
    users, uinv = np.unique(user, return_inverse=True)
    counts = np.bincount(uinv)
    per_user_a = np.bincount(uinv, weights=a) / counts
    per_user_d = np.bincount(uinv, weights=d) / counts
    acc = float(per_user_a.mean())
    excess = float(per_user_d.mean())
    if len(users) >= 2:
        groups = per_user_d
    else:
        _, cinv = np.unique(cluster, return_inverse=True)
        groups = np.bincount(cinv, weights=d) / np.bincount(cinv)
        excess = float(groups.mean())
        acc = float(np.bincount(cinv, weights=a).sum() / len(a)) if len(a) else 0.0
    lo_x = hi_x = None
    if len(groups) >= 2:
        half = quantile(alpha, len(groups) - 1) * float(np.std(groups, ddof=1)) / math.sqrt(len(groups))
        lo_x, hi_x = excess - half, excess + half
    n_eff, _ = effective_size(a, cluster)
    cr_lo = wilson_lo(float(a.mean()), n_eff, quantile(alpha)) - float(b.mean()) if n_eff > 0 else None
    bounds = [x for x in (lo_x, cr_lo) if x is not None]
    baseline = acc - excess
    return GateStat(
        accuracy=acc, baseline=baseline, excess=excess,
        lo=None if lo_x is None else max(0.0, baseline + lo_x), hi=None if hi_x is None else min(1.0, baseline + hi_x),
        gate_lo=baseline + min(bounds) if bounds else None, answers=len(a),
    )


def decide(stat: GateStat, margin: float) -> str:
    """``fail`` when the lower bound of the excess is above ``margin`` (the strategy surely beats its baseline
    by more than the margin); ``borderline`` when the strategy surely beats its baseline but its interval
    holds the margin (within noise of it: reported with the interval, never a verdict that flips with the
    sample); else ``pass``."""
    if stat.gate_lo is None:
        return "pass"
    lower = stat.gate_lo - stat.baseline
    if lower > margin:
        return "fail"
    upper = (stat.hi if stat.hi is not None else stat.accuracy) - stat.baseline
    if lower > 1e-12 and upper >= margin:
        return "borderline"
    return "pass"
