"""Paired comparison of two runs: bootstrap interval and sign-flip permutation test over users.

Users are the sampling unit: a user's periods share a conversation, so their differences are not
independent. Both the bootstrap and the permutation test therefore move whole users.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

#: Up to this many users the sign-flip test enumerates every sign pattern (2**n) instead of sampling.
EXACT_MAX_USERS = 12


@dataclass(frozen=True)
class PairedComparison:
    """Result of :func:`paired_comparison` (differences are B minus A).

    Attributes:
        mean_diff: mean over the shared (user, period) cells of B's memory score minus A's.
        lo: lower end of the 95 % bootstrap percentile interval (None with fewer than two users).
        hi: upper end of that interval.
        p_value: two-sided p-value of the paired sign-flip permutation test over users.
        exact: whether the permutation test enumerated every sign pattern.
        users: users with at least one shared cell.
        cells: shared (user, period) cells.
        resamples: bootstrap resamples drawn.
        seed: seed of the numpy Generator.
    """

    mean_diff: float
    lo: float | None
    hi: float | None
    p_value: float
    exact: bool
    users: int
    cells: int
    resamples: int
    seed: int


def result_rows(res: PairedComparison, unit: str) -> list[tuple[str, str]]:
    """The (quantity, value) rows every comparison table shows for ``res``; ``unit`` names what was resampled."""
    ci = f"n/a (one {unit})" if res.lo is None else f"[{res.lo:+.4f}, {res.hi:+.4f}]"
    how = "exact, all sign patterns" if res.exact else f"{res.resamples} random sign patterns"
    return [
        ("mean difference", f"{res.mean_diff:+.4f}"),
        (f"95 % bootstrap CI ({unit}s resampled)", ci),
        (f"p-value (paired sign-flip permutation over {unit}s; {how})", f"{res.p_value:.4g}"),
        ("seed / resamples", f"{res.seed} / {res.resamples}"),
    ]


def _pooled(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    # Mean over all cells of the selected users, i.e. weighted by each user's number of cells.
    return sums.sum(axis=-1) / counts.sum(axis=-1)


def paired_comparison(
    diffs: dict[str, list[float]], *, resamples: int = 10_000, seed: int = 0
) -> PairedComparison:
    """Compare two runs from per-user lists of cell differences (B - A).

    Args:
        diffs: per user, the differences of its shared (user, period) cells; users without cells are ignored.
        resamples: bootstrap resamples, also the Monte-Carlo size of the permutation test when
            there are more than :data:`EXACT_MAX_USERS` users.
        seed: seed of the ``numpy.random.Generator`` used for both.

    Returns:
        The mean difference, its 95 % bootstrap interval (users resampled with replacement) and the
        two-sided p-value of the test that flips the sign of each user's differences at random.

    Raises:
        ValueError: no shared cell at all, or fewer than one resample.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    users = [u for u in sorted(diffs) if diffs[u]]
    if not users:
        raise ValueError("the runs share no (user, period) cell with a defined memory score")
    sums = np.array([sum(diffs[u]) for u in users], dtype=float)
    counts = np.array([len(diffs[u]) for u in users], dtype=float)
    observed = float(sums.sum() / counts.sum())
    rng = np.random.default_rng(seed)
    n = len(users)

    lo = hi = None
    if n >= 2:
        idx = rng.integers(0, n, size=(resamples, n))
        boots = _pooled(sums[idx], counts[idx])
        lo, hi = (float(x) for x in np.quantile(boots, [0.025, 0.975]))

    # A tolerance keeps floating-point noise from deciding ties (identical runs must give p = 1).
    tol = 1e-12 * max(1.0, abs(observed))
    exact = n <= EXACT_MAX_USERS
    if exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        stats = (signs * sums).sum(axis=1) / counts.sum()
        p = float(np.mean(np.abs(stats) >= abs(observed) - tol))
    else:
        signs = rng.choice(np.array([1.0, -1.0]), size=(resamples, n))
        stats = (signs * sums).sum(axis=1) / counts.sum()
        # The observed assignment counts as one of the permutations, so p is never 0.
        p = float((1 + np.sum(np.abs(stats) >= abs(observed) - tol)) / (resamples + 1))
    return PairedComparison(mean_diff=observed, lo=lo, hi=hi, p_value=min(1.0, p), exact=exact, users=n,
                            cells=int(counts.sum()), resamples=resamples, seed=seed)


def shared_cell_means(
    per_user_a: dict[str, dict[str, dict[str, object]]],
    per_user_b: dict[str, dict[str, dict[str, object]]],
    key: str = "memory_score",
) -> tuple[float, float] | None:
    """A's and B's mean over the cells :func:`cell_differences` compares, pooled as :func:`paired_comparison`
    pools them (each cell counts once), so B's minus A's is the mean difference it reports; None without any."""
    pairs = [(float(a[p][key]), float(b[p][key]))  # type: ignore[arg-type]
             for user in sorted(set(per_user_a) & set(per_user_b))
             for a, b in [(per_user_a[user], per_user_b[user])]
             for p in sorted(set(a) & set(b), key=int)
             if isinstance(a[p].get(key), int | float) and isinstance(b[p].get(key), int | float)]
    if not pairs:
        return None
    return sum(x for x, _ in pairs) / len(pairs), sum(y for _, y in pairs) / len(pairs)


def cell_differences(
    per_user_a: dict[str, dict[str, dict[str, object]]],
    per_user_b: dict[str, dict[str, dict[str, object]]],
    key: str = "memory_score",
) -> dict[str, list[float]]:
    """Per user, B minus A for every period cell both runs scored (cells where either is None are skipped)."""
    out: dict[str, list[float]] = {}
    for user in sorted(set(per_user_a) & set(per_user_b)):
        a, b = per_user_a[user], per_user_b[user]
        vals = []
        for period in sorted(set(a) & set(b), key=int):
            va, vb = a[period].get(key), b[period].get(key)
            if isinstance(va, int | float) and isinstance(vb, int | float):
                vals.append(float(vb) - float(va))
        if vals:
            out[user] = vals
    return out
