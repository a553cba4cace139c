"""A new metric is one function plus a name: registered here, it reaches aggregate(), its definitions and the
report's curves without any other module changing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amemgym.families.statetrack.metrics import Cell, QuestionOutcome, aggregate
from amemgym.report.aggregate import curve_panels, period_series
from amemgym.report.charts import curves_chart
from amemgym.scoring.registry import find, metric, registered, unregister


def _outcomes() -> list[QuestionOutcome]:
    """Two users, two periods, two questions; u1 is lucky once (right with a probe wrong), u2 twice."""
    rows = []
    for user, lucky in (("u1", {(0, 0)}), ("u2", {(0, 1), (1, 0)})):
        for p in range(2):
            for q in range(2):
                is_lucky = (p, q) in lucky
                rows.append(QuestionOutcome(user=user, period=p, question=q, score=1.0 if is_lucky else 0.0,
                                            n_choices=4, ub_score=1.0, probe={"v": not is_lucky},
                                            changed_at={"v": 0}))
    return rows


@pytest.fixture
def lucky() -> Iterator[str]:
    @metric("lucky_guesses", "share of questions answered right although a required variable was probed wrong",
            label="lucky guesses")
    def lucky_guesses(cell: Cell) -> float | None:
        hits = [o.score == 1.0 and not all(o.probe.values()) for o in cell.outcomes]
        return sum(hits) / len(hits)

    try:
        yield "lucky_guesses"
    finally:
        unregister("lucky_guesses")


def test_a_registered_metric_appears_in_every_block_of_aggregate(lucky: str) -> None:
    m = aggregate(_outcomes(), 2)
    # Per cell: u1 is lucky on 1 of 2 questions at period 0, never at period 1; u2 once in each period.
    assert [m["per_user"]["u1"][p][lucky] for p in ("0", "1")] == [0.5, 0.0]
    assert [m["per_user"]["u2"][p][lucky] for p in ("0", "1")] == [0.5, 0.5]
    # Per period and overall: the mean over users, each user counted once.
    assert [row[lucky]["mean"] for row in m["per_period"]] == [0.5, 0.25]
    assert m["overall"][lucky]["mean"] == pytest.approx(0.375)
    assert m["overall"][lucky]["n"] == 2
    # A bounded metric's interval is clipped to [0, 1] like the accuracies' (two users give a wide t-interval).
    assert 0.0 <= m["overall"][lucky]["lo"] <= m["overall"][lucky]["hi"] <= 1.0
    assert m["definitions"][lucky].startswith("share of questions answered right although")
    # The built-ins are untouched by the newcomer.
    assert m["overall"]["overall"]["mean"] == pytest.approx(0.375)


def test_a_registered_metric_gets_a_report_curve(lucky: str) -> None:
    assert (lucky, "Lucky guesses") in curve_panels()
    metrics = aggregate(_outcomes(), 2)
    chart = curves_chart({"run": {n: period_series(metrics, n) for n, _ in curve_panels()}})
    panel = next(p for p in chart["panels"] if p["name"] == lucky)
    assert panel == {"name": lucky, "title": "Lucky guesses", "signed": False}
    assert [s["mean"] for s in chart["series"][0]["curves"][lucky]] == [0.5, 0.25]


def test_unregistering_removes_it_everywhere(lucky: str) -> None:
    unregister(lucky)
    assert find(lucky) is None
    m = aggregate(_outcomes(), 2)
    assert lucky not in m["overall"] and lucky not in m["definitions"]
    assert lucky not in m["per_user"]["u1"]["0"]
    assert all(name != lucky for name, _ in curve_panels())


def test_a_taken_name_is_refused() -> None:
    with pytest.raises(ValueError, match="'memory_score' is already registered"):
        metric("memory_score", "a second memory score")(lambda cell: 0.0)
    with pytest.raises(ValueError, match="only pooled metrics sit in a group or under a key"):
        metric("stray", "a cell metric in a group", group="failure_rates")
    # A key that metrics.json already uses for something else would be overwritten without a word.
    for name, options in (("users", {}), ("failure_rates", {"level": "pooled"}),
                          ("x", {"level": "pooled", "key": "flags"}), ("y", {"level": "pooled", "key": "overall"}),
                          ("z", {"level": "pooled", "group": "degenerate"}),
                          ("w", {"level": "pooled", "group": "overall"}),
                          ("v", {"level": "pooled", "group": "failure_rates", "key": "read"})):
        with pytest.raises(ValueError, match="reserved or already written"):
            metric(name, "a clash", **options)(lambda cell: 0.0)
        assert find(name) is None
    # A new member of an existing group is fine.
    metric("v", "a fourth failure rate", level="pooled", group="failure_rates", key="v")(lambda rows: None)
    unregister("v")
    assert find("memory_score") is not None and find("memory_score").bounded is False  # type: ignore[union-attr]


def test_the_built_in_keys_keep_the_metrics_json_shape() -> None:
    """metrics.json readers rely on these keys, in this order; the registry must not move them."""
    assert [m.name for m in registered()] == [
        "overall", "random", "upper_bound", "memory_score", "questions", "write_failures", "read_failures",
        "utilization_failures", "probe_items", "memory_score_all_cells", "memory_score_original", "write_rate",
        "read_rate", "utilization_rate"]
    m = aggregate(_outcomes(), 2)
    assert list(m["per_user"]["u1"]["0"]) == ["overall", "random", "upper_bound", "memory_score", "questions",
                                              "write_failures", "read_failures", "utilization_failures",
                                              "probe_items"]
    assert list(m["per_period"][0]) == ["period", "overall", "random", "upper_bound", "memory_score",
                                        "failure_rates"]
    assert list(m["definitions"]) == ["memory_score", "memory_score_all_cells", "memory_score_original", "ci",
                                      "write_rate", "read_rate", "utilization_rate", "flags"]
    assert list(m["overall"]) == ["overall", "random", "upper_bound", "memory_score", "memory_score_all_cells",
                                  "memory_score_original", "failure_rates", "users", "undefined_memory_cells",
                                  "memory_cells", "flags", "degenerate"]
    assert list(m["overall"]["failure_rates"]) == ["write", "read", "utilization"]
    assert curve_panels() == (("overall", "Overall"), ("upper_bound", "Upper bound"), ("random", "Random"),
                              ("memory_score", "Memory score"))
