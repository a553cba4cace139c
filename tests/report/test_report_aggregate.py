"""Aggregation and figures on hand-made metrics."""

from __future__ import annotations

from amemgym.report.aggregate import (
    Stat,
    failure_series,
    period_series,
    question_period_grid,
    summarize,
    user_period_grid,
)
from amemgym.report.browser import embed_json
from amemgym.report.figures import curves_figure, diagnosis_figure, encode, heatmap_figure


def stat(mean, lo=None, hi=None, n=2):
    return {"mean": mean, "lo": lo, "hi": hi, "n": n}


METRICS = {
    "overall": {"overall": stat(0.5, 0.4, 0.6), "random": stat(0.25), "upper_bound": stat(0.9),
                "memory_score": stat(0.38, 0.2, 0.56), "users": 2,
                "failure_rates": {"write": 0.25, "read": 0.1, "utilization": None}},
    "per_period": [
        {"period": 1, "overall": stat(0.4), "random": stat(0.25), "upper_bound": stat(0.9),
         "memory_score": stat(0.23, 0.1, 0.36), "failure_rates": {"write": 0.5, "read": 0.2, "utilization": 0.0}},
        {"period": 0, "overall": stat(0.6), "random": stat(0.25), "upper_bound": stat(0.9),
         "memory_score": stat(None, n=0), "failure_rates": {"write": 0.0, "read": None, "utilization": 0.5}},
    ],
    "per_user": {"u1": {"0": {"memory_score": 0.5}, "1": {"memory_score": None}}, "u2": {"1": {"memory_score": -0.1}}},
    "complete": False,
    "usage": {"cumulative": {"agent": {"calls": 3, "prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.5},
                             "simulator": {"calls": 1, "prompt_tokens": 20, "completion_tokens": 5},
                             "total": {"calls": 4, "prompt_tokens": 120}}},
    "wall_seconds_last_invocation": 12.5,
}


def test_summary_reads_headline_numbers_and_usage() -> None:
    s = summarize("run", "native", METRICS)
    assert s.memory_score.text() == "0.380 [0.200, 0.560]" and s.stat("random").text() == "0.250"
    assert s.rates == {"write_rate": 0.25, "read_rate": 0.1, "utilization_rate": None}
    assert [u.role for u in s.usage] == ["agent", "simulator"]
    assert s.total_tokens == 135 and s.total_cost == 0.5 and not s.complete and s.wall_seconds == 12.5


def test_period_series_are_ordered_by_period() -> None:
    assert [s.mean for s in period_series(METRICS, "overall")] == [0.6, 0.4]
    assert period_series(METRICS, "memory_score")[0] == Stat(None, None, None, 0)
    assert failure_series(METRICS) == {"write": [0.0, 0.5], "read": [None, 0.2], "utilization": [0.5, 0.0]}


def test_user_grid_marks_missing_cells() -> None:
    grid = user_period_grid(METRICS, ["u1", "u2"], 2)
    assert grid.rows == ("u1", "u2") and grid.cols == ("P0", "P1")
    assert grid.values == ((0.5, None), (None, -0.1))


def test_question_grid_from_eval_records() -> None:
    evals = {"u1": {0: {"questions": [{"question": 0, "score": 1.0}, {"question": 1, "score": 0.0}]},
                    2: {"questions": [{"question": 1, "score": 1.0}]}}}
    grid = question_period_grid(evals, 3)
    assert grid.rows == ("u1 Q0", "u1 Q1")
    assert grid.values == ((1.0, None, None), (0.0, None, 1.0))


def curves_of(metrics: dict):
    return curves_figure({"a": {n: period_series(metrics, n) for n in ("overall", "upper_bound", "random",
                                                                        "memory_score")}})


def test_figures_encode_to_svg_and_png() -> None:
    curves = curves_of(METRICS)
    bars = diagnosis_figure({"a": failure_series(METRICS), "b": failure_series(METRICS)})
    heat = heatmap_figure(user_period_grid(METRICS, ["u1", "u2"], 2), "memory", vmin=-1, vmax=1)
    for fig in (curves, bars, heat):
        svg = encode(fig, "svg")
        assert svg.lstrip().startswith(b"<?xml") and b"<svg" in svg and b"<script" not in svg
        assert encode(fig, "png").startswith(b"\x89PNG")
    assert encode(curves_of(METRICS), "svg") == encode(curves_of(METRICS), "svg")


def test_embedded_json_cannot_close_its_script_block() -> None:
    text = embed_json({"reply": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text
    import json

    assert json.loads(text) == {"reply": "</script><!-- & \u2028"}
