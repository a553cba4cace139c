"""Readers that showed numbers disagreeing with the records beside them (found by recomputing every reader's
output from the run's own files): compare's two sides, a --trials run's usage and trace browser, the answer
rule of the question heat map, the recall interval of evolve, and a simulator echo with instructions added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.statetrack.validity.sim_audit import degenerate_flags
from amemgym.report.aggregate import question_period_grid, summarize
from amemgym.report.browser import browser_run
from amemgym.report.load import load_run
from amemgym.report.stats import cell_differences, paired_comparison, shared_cell_means
from amemgym.scoring.intervals import share_ci
from amemgym.testing.fake_endpoint import FakeEndpoint


def _run(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def test_the_two_sides_over_shared_cells_differ_by_the_reported_difference() -> None:
    a = {"u1": {"0": {"memory_score": 0.2}, "1": {"memory_score": 0.4}, "2": {"memory_score": None}},
         "u2": {"0": {"memory_score": 1.0}}}
    b = {"u1": {"0": {"memory_score": 0.5}, "1": {"memory_score": 0.1}, "2": {"memory_score": 0.9}},
         "u2": {"0": {"memory_score": 0.0}}, "u3": {"0": {"memory_score": 1.0}}}
    mean_a, mean_b = shared_cell_means(a, b)  # type: ignore[misc]
    res = paired_comparison(cell_differences(a, b), resamples=10)
    assert mean_b - mean_a == pytest.approx(res.mean_diff)


def test_the_question_heat_map_scores_under_the_runs_answer_rule() -> None:
    q = {"question": 0, "score": 0.0, "score_original_rule": 1.0, "ub_score": 1.0}
    evals = {"u": {0: {"questions": [q]}}}
    assert question_period_grid(evals, 1).values == ((0.0,),)
    assert question_period_grid(evals, 1, "original").values == ((1.0,),)


def test_a_share_interval_stays_within_zero_and_one() -> None:
    ci = share_ci([0.0, 0.0, 1.0])
    assert ci["lo"] == 0.0 and ci["hi"] == 1.0 and ci["mean"] == pytest.approx(1 / 3)


def test_a_turn_holding_the_whole_reply_plus_instructions_is_an_echo() -> None:
    reply = "Here is a short, practical suggestion for you (note 2284)."
    turn = reply + "\n\n(You are Rene, the person asking for advice. Write Rene's next message.)"
    assert "near_echo" in degenerate_flags(turn, "opening text", reply, [])
    assert "near_echo" not in degenerate_flags("Thanks, that helps. What about weekends?", "opening text", reply, [])


def test_compare_says_when_the_protocols_differ(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    _run("run", "--out", str(tmp_path / "s"), "--limit", "1")
    _run("run", "--out", str(tmp_path / "o"), "--limit", "1", "--set", "run.answer_rule=original")
    out = " ".join(_run("compare", str(tmp_path / "s"), str(tmp_path / "o")).split())
    assert "PROTOCOL differs (run.answer_rule: 'strict' in A, 'original' in B)" in out
    same = " ".join(_run("compare", str(tmp_path / "s"), str(tmp_path / "s")).split())
    assert "PROTOCOL" not in same


def test_a_trials_run_reports_every_trials_usage_and_the_first_trials_cells(endpoint: FakeEndpoint,
                                                                            tmp_path: Path) -> None:
    out = tmp_path / "t"
    _run("run", "--out", str(out), "--limit", "1", "--trials", "2")
    run = load_run(out)
    total = sum(u.prompt_tokens + u.completion_tokens for u in summarize("t", "native", run.metrics).usage)
    trials = [json.loads((out / f"trial_{k}" / "metrics.json").read_text())["usage"]["cumulative"]["total"]
              for k in (1, 2)]
    assert total == sum(t["prompt_tokens"] + t["completion_tokens"] for t in trials) > 0
    first = json.loads((out / "trial_1" / "metrics.json").read_text())["per_user"]
    data = browser_run(run, None, None)
    assert data["detail"] == "trial_1 of 2 trials"
    for user in data["users"]:
        for period in user["periods"]:
            assert period["cell"] == first[user["id"]][str(period["period"])]
