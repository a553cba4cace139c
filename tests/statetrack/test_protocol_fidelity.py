"""The original protocol's numbers: presets, the original answer rule, the unguarded memory aggregation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import PROTOCOL_MAX_TOKENS, load_config
from amemgym.families.statetrack.asking import original_rule_choice, parse_answer
from amemgym.families.statetrack.metrics import QuestionOutcome, aggregate, original_memory_aggregation
from amemgym.families.statetrack.results import protocol_settings
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, request_kind


@pytest.mark.parametrize("preset", ["v1.base", "v1.extra"])
def test_v1_presets_use_the_protocol_budgets(preset: str) -> None:
    run = load_config(preset).run
    assert (run.reply_max_tokens, run.simulator_max_tokens, run.eval_max_tokens) == (PROTOCOL_MAX_TOKENS,) * 3
    assert protocol_settings(run)["differences_from_original"] == []
    assert run.agent_system_prompt is False and run.context_window >= 1_000_000


def test_tiny_says_where_it_leaves_the_protocol() -> None:
    diffs = protocol_settings(load_config("tiny").run)["differences_from_original"]
    assert any(d.startswith("reply_max_tokens is 96") for d in diffs)
    assert any(d.startswith("simulator_max_tokens is 48") for d in diffs)


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"answer": 0}', (4, False)),        # index -1: the last option
    ('{"answer": -1}', (3, False)),
    ('{"answer": 4}', (4, False)),
    ('```json\n{"answer": 2}\n```', (2, False)),
    ('{"answer": true}', (1, False)),     # a bool is an int to the original's index arithmetic
])
def test_original_rule_indexes_like_a_python_list(reply: str, expected: tuple[int, bool]) -> None:
    assert original_rule_choice(reply, 4, rng_seed=3) == expected


@pytest.mark.parametrize("reply", ['{"answer": 5}', '{"answer": -4}', '{"answer": "2"}', '{"answer": 2.0}', "two"])
def test_original_rule_draws_a_seeded_random_option_otherwise(reply: str) -> None:
    picks = {original_rule_choice(reply, 4, rng_seed=s) for s in range(40)}
    assert all(drawn for _, drawn in picks) and {c for c, _ in picks} == {1, 2, 3, 4}
    assert original_rule_choice(reply, 4, rng_seed=9) == original_rule_choice(reply, 4, rng_seed=9)


def test_strict_rule_still_scores_zero_wrong() -> None:
    ans = parse_answer('{"answer": 0}', 4, rng_seed=1)
    assert ans.choice is None and ans.status == "out_of_range" and ans.original_choice == 4


def test_original_aggregation_is_unguarded() -> None:
    assert original_memory_aggregation([(0.5, 0.25, 0.75), (1.0, 0.25, 0.25)]) == "inf"
    assert original_memory_aggregation([(0.5, 0.25, 0.75), (0.25, 0.25, 0.25)]) == "nan"
    assert original_memory_aggregation([(0.0, 0.25, 0.25)]) == "-inf"
    assert original_memory_aggregation([(0.5, 0.25, 0.75), (0.0, 0.25, 0.0)]) == pytest.approx((0.5 + 1.0) / 2)
    assert original_memory_aggregation([]) is None


def test_metrics_name_both_aggregations() -> None:
    def o(user: str, period: int, score: float, ub: float) -> QuestionOutcome:
        return QuestionOutcome(user=user, period=period, question=0, score=score, n_choices=4, ub_score=ub)

    m = aggregate([o("a", 0, 1.0, 1.0), o("a", 1, 1.0, 0.25), o("b", 0, 0.0, 1.0)], num_periods=2)
    assert m["overall"]["undefined_memory_cells"] == 1
    assert m["overall"]["memory_score_all_cells"] == pytest.approx((1.0 + -1 / 3) / 2)
    assert m["overall"]["memory_score_original"] == "inf"
    assert "original release's aggregation" in m["definitions"]["memory_score_original"]


def _minus_one(body: dict) -> str:
    # -1 is out of range for amemgym but the second-to-last option for the original (the fixture's gold
    # option there in 2 of 6 cases, the last option never).
    return '{"answer": -1}' if request_kind(body) == "answer" else default_responder(body)


def test_run_summary_counts_invalid_answers_and_flags_small_caps(original_env_path: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(responder=_minus_one) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", "--env", str(original_env_path), "--config", "tiny",
                                          "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "invalid answers: 6 of 6 (out of range 6); headline uses strict: scored wrong" in text
    assert "reply_max_tokens is 96 (the original allows 8192)" in text
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["overall"]["mean"] == 0.0 and metrics["answers"]["overall_strict"] == 0.0
    assert metrics["answers"]["overall_original_rule"] == pytest.approx(2 / 6)
    assert metrics["protocol_settings"]["reply_max_tokens"] == 96
    page = (tmp_path / "run" / "report.html").read_text()
    assert "invalid answers 6 of 6 (headline rule: strict)" in page
    assert "the original&#x27;s (mean over all user x period cells, unguarded)" in page
    assert "not comparable with published results: reply_max_tokens is 96" in page
