"""Pure metric functions on hand-made numbers."""

from __future__ import annotations

import math

import pytest

from amemgym.families.statetrack.metrics import QuestionOutcome, aggregate, diagnose, memory_score
from amemgym.scoring.intervals import mean_ci


def test_mean_ci_uses_t_quantiles() -> None:
    ci = mean_ci([0.0, 1.0])
    assert ci["mean"] == 0.5
    # t(0.975, df=1) = 12.706; sd = 0.7071; half = 12.706 * 0.7071 / sqrt(2) = 6.353
    assert ci["hi"] - ci["mean"] == pytest.approx(6.353, abs=1e-3)
    assert mean_ci([]) == {"mean": None, "lo": None, "hi": None, "n": 0}
    assert mean_ci([0.3])["lo"] is None


def test_memory_score_guard() -> None:
    assert memory_score(0.5, 0.25, 1.0) == pytest.approx(1 / 3)
    assert memory_score(0.5, 0.25, 0.25) is None
    assert memory_score(0.5, 0.3, 0.2) is None


def test_random_baseline_is_analytic() -> None:
    outs = [QuestionOutcome("u", 0, q, score=0.0, n_choices=n, ub_score=1.0) for q, n in enumerate((4, 5))]
    agg = aggregate(outs, 1)
    assert agg["per_period"][0]["random"]["mean"] == pytest.approx((1 / 4 + 1 / 5) / 2)


def test_diagnosis_write_read_utilization() -> None:
    o = [
        QuestionOutcome("u", 0, 0, 1.0, 4, 1.0, {"a": True}, {"a": 0}),
        QuestionOutcome("u", 1, 0, 0.0, 4, 1.0, {"a": False}, {"a": 0}),  # stored at 0, lost: read
        QuestionOutcome("u", 2, 0, 0.0, 4, 1.0, {"a": False}, {"a": 2}),  # changed now, missed: write
        QuestionOutcome("u", 3, 0, 0.0, 4, 1.0, {"a": True}, {"a": 2}),  # knew it, answered wrong: utilization
    ]
    d = diagnose(o)
    assert d[("u", 1, 0)]["variables"] == {"a": "read"}
    assert d[("u", 2, 0)]["variables"] == {"a": "write"}
    assert d[("u", 3, 0)]["utilization"] is True
    assert d[("u", 0, 0)]["utilization"] is False


def test_t_quantile_matches_published_table_values() -> None:
    from amemgym.scoring.intervals import t95

    known = {1: 12.7062, 2: 4.3027, 10: 2.2281, 30: 2.0423, 31: 2.0395, 40: 2.0211, 60: 2.0003, 120: 1.9799}
    for dof, value in known.items():
        assert t95(dof) == pytest.approx(value, abs=5e-4), dof
    assert t95(10**6) == pytest.approx(1.95997, abs=1e-4)
    with pytest.raises(ValueError):
        t95(0)


def test_t_quantile_is_scipy_stats_own_value() -> None:
    # t95 avoids importing scipy.stats (slow) by calling the inverse CDF it uses; the value must be the same.
    from scipy.stats import t

    from amemgym.scoring.intervals import t95

    for dof in [*range(1, 400), 1_000, 10_000, 10**6]:
        assert t95(dof) == float(t.ppf(0.975, dof)), dof


@pytest.mark.parametrize("n", [31, 41, 61])
def test_interval_past_thirty_users_is_not_the_normal_one(n: int) -> None:
    # A normal quantile (1.96) past 30 users would be 2-4 % too narrow up to 60 users.
    from amemgym.scoring.intervals import t95

    values = [float(i % 2) for i in range(n)]
    ci = mean_ci(values)
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    assert ci["hi"] - ci["mean"] == pytest.approx(t95(n - 1) * sd / math.sqrt(n), rel=1e-9)
    assert ci["hi"] - ci["mean"] > 1.96 * sd / math.sqrt(n) * 1.015
