"""Paired comparison on constructed per-user differences."""

from __future__ import annotations

import pytest

from amemgym.report.stats import cell_differences, paired_comparison


def test_known_gain_has_interval_excluding_zero() -> None:
    # 20 users whose mean gains spread over 0.1..0.3, with per-period wobble.
    diffs = {f"u{i:02d}": [0.2 + 0.05 * ((i * 7) % 5 - 2) + 0.03 * (p - 1) for p in range(3)] for i in range(20)}
    res = paired_comparison(diffs, resamples=4000, seed=1)
    assert res.mean_diff == pytest.approx(0.2, abs=0.02)
    assert res.lo is not None and res.hi is not None and 0 < res.lo < res.mean_diff < res.hi
    assert not res.exact and res.p_value < 0.001 and res.users == 20 and res.cells == 60


def test_identical_runs_give_zero_and_p_one() -> None:
    same = {"u1": {"0": {"memory_score": 0.4}, "1": {"memory_score": 0.1}},
            "u2": {"0": {"memory_score": -0.2}, "1": {"memory_score": None}}}
    diffs = cell_differences(same, same)
    assert diffs == {"u1": [0.0, 0.0], "u2": [0.0]}
    res = paired_comparison(diffs, seed=0)
    assert res.mean_diff == 0.0 and res.p_value == 1.0 and res.exact
    assert res.lo == res.hi == 0.0


def test_exact_sign_flip_p_value() -> None:
    # Three users all gaining: of 8 sign patterns, only all-plus and all-minus reach |mean| -> p = 2/8.
    res = paired_comparison({"a": [1.0], "b": [1.0], "c": [1.0]})
    assert res.exact and res.p_value == pytest.approx(0.25)


def test_same_seed_same_interval() -> None:
    diffs = {f"u{i}": [float(i % 4) - 1.0] for i in range(15)}
    assert paired_comparison(diffs, resamples=500, seed=3) == paired_comparison(diffs, resamples=500, seed=3)


def test_only_shared_defined_cells_are_compared() -> None:
    a = {"u1": {"0": {"memory_score": 0.1}, "1": {"memory_score": 0.2}}, "u2": {"0": {"memory_score": 0.3}}}
    b = {"u1": {"0": {"memory_score": 0.5}}, "u3": {"0": {"memory_score": 0.9}}}
    assert cell_differences(a, b) == {"u1": [pytest.approx(0.4)]}


def test_no_shared_cell_is_an_error() -> None:
    with pytest.raises(ValueError, match="share no"):
        paired_comparison({"u1": []})
