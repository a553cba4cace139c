"""Adversarial replies against every scoring path: a hedge must never score as a right answer.

MemoryGym's answer checker accepted a list of every candidate; these tests make sure ours accepts one
option (or one value per variable) and nothing else. Gaps once found in shared code are fixed and pinned here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amemgym.families.statetrack.asking import parse_answer, parse_probe
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.metrics import QuestionOutcome, aggregate, memory_score
from amemgym.llm.parsing import parse_choice

N = 4


@pytest.mark.parametrize("reply", [
    "1, 2, 3, 4",
    "Options 1, 2, 3 and 4 all fit",
    "1 or 2",
    "option 2 (not 3)",
    '{"answer": [1, 2, 3]}',
    '{"answer": [1, 2, 3, 4]}',
    "[1, 2, 3, 4]",
    "[2]",
    '{"answer": "all"}',
    '{"answer": "1,2,3,4"}',
    '{"answer": "2 or 3"}',
    '{"answer": true}',
    '{"answer": false}',
    "true",
    '{"answer": null}',
    '{"answers": 2}',
    '{"answer": {"1": true, "2": true}}',
    '{"answer": "Option 2"}',
    "2.5",
    '{"answer": 2.5}',
    '{"answer": NaN}',
    '{"answer": Infinity}',
    "",
    "   ",
    "no idea",
    "[" * 100_000 + "]" * 100_000,  # nested deeper than any parser goes
    '{"answer": ' + "[" * 5_000,
    '```json\n{"answer": ' + "[" * 5_000 + "]" * 5_000 + "}\n```",
])
def test_hedges_and_junk_are_unparseable(reply: str) -> None:
    assert parse_choice(reply, N) == (None, "unparseable")


@pytest.mark.parametrize("reply", ["0", "-1", "5", '{"answer": 0}', '{"answer": -2}', '{"answer": "-0"}',
                                   '{"answer": 9999999999999999999999}'])
def test_out_of_range_is_never_a_pick(reply: str) -> None:
    assert parse_choice(reply, N) == (None, "out_of_range")


@pytest.mark.parametrize(("reply", "pick"), [
    ('{"answer": 3}', 3),
    ('"2"', 2),
    ('{"answer": "2"}', 2),
    ('{"answer": 2.0}', 2),
    ("```json\n{\"answer\": 3}\n```", 3),
    ('I think the best is {"answer": 2} because it fits.', 2),
    ("Answer: 2", 2),
    ("2.", 2),
])
def test_single_clear_answers_parse(reply: str, pick: int) -> None:
    assert parse_choice(reply, N) == (pick, "ok")


@pytest.mark.parametrize("reply", [
    '{"answer": 1}{"answer": 2}{"answer": 3}{"answer": 4}',
    '{"answer": 2} {"answer": 3}',
    "```json\n{\"answer\": 1}\n```\n```json\n{\"answer\": 2}\n```",
])
def test_several_json_answers_are_unparseable(reply: str) -> None:
    assert parse_choice(reply, N)[0] is None


def test_duplicate_answer_keys_are_unparseable() -> None:
    assert parse_choice('{"answer": 2, "answer": 3}', N)[0] is None


def test_invalid_reply_scores_wrong_but_keeps_a_fallback() -> None:
    ans = parse_answer('{"answer": [1, 2, 3, 4]}', N, rng_seed=1)
    assert ans.choice is None and ans.status == "unparseable" and ans.original_random and 1 <= ans.original_choice <= N


@pytest.fixture
def user_qa(original_env_path: Path):
    user = load_environment(original_env_path).users[0]
    return user, user.qas[0]  # work_shift_pattern, running_goal


@pytest.mark.parametrize("value", [
    ["fixed_daytime", "rotating_nights", "part_time_mornings"],
    "fixed_daytime, rotating_nights, part_time_mornings",
    "fixed_daytime or rotating_nights",
    "all",
    "hot_plate_only",  # a value of another variable
    True,
    1,
    {"fixed_daytime": True},
    None,
])
def test_probe_hedges_never_count(user_qa, value) -> None:
    import json

    user, qa = user_qa
    got = parse_probe(json.dumps({"work_shift_pattern": value}), user, qa)
    assert got["work_shift_pattern"] is None


def test_probe_accepts_one_value_in_loose_spelling(user_qa) -> None:
    user, qa = user_qa
    got = parse_probe('{"work_shift_pattern": "Fixed Daytime", "running_goal": "half-marathon."}', user, qa)
    assert got == {"work_shift_pattern": "fixed_daytime", "running_goal": "half_marathon"}


def test_probe_without_object_gives_nothing(user_qa) -> None:
    user, qa = user_qa
    assert parse_probe('["fixed_daytime", "casual_5k"]', user, qa) == {v: None for v in qa.required_info}


@pytest.mark.parametrize("reply", [
    '{"work_shift_pattern": "fixed_daytime"} {"work_shift_pattern": "rotating_nights"}',
    '{"work_shift_pattern": "fixed_daytime", "work_shift_pattern": "rotating_nights"}',
])
def test_probe_with_two_answers_for_a_variable_does_not_count(user_qa, reply: str) -> None:
    user, qa = user_qa
    assert parse_probe(reply, user, qa)["work_shift_pattern"] is None


def _outcome(user: str, period: int, q: int, score: float, ub: float = 1.0) -> QuestionOutcome:
    return QuestionOutcome(user=user, period=period, question=q, score=score, n_choices=4, ub_score=ub,
                           probe={"x": score == 1.0}, changed_at={"x": 0})


def test_aggregate_scores_stay_within_bounds() -> None:
    outs = [_outcome(u, p, q, 1.0) for u in ("a", "b") for p in range(2) for q in range(3)]
    m = aggregate(outs, 2)
    assert m["overall"]["overall"]["mean"] == 1.0
    assert m["overall"]["memory_score"]["mean"] == pytest.approx(1.0)
    for row in m["per_period"]:
        assert 0.0 <= row["overall"]["mean"] <= 1.0


@pytest.mark.parametrize(("o", "r", "ub"), [(0.5, 0.25, 0.25), (0.5, 0.25, 0.2), (0.3, 0.25, 0.25 + 1e-13)])
def test_memory_score_is_undefined_when_upper_bound_is_not_above_random(o: float, r: float, ub: float) -> None:
    assert memory_score(o, r, ub) is None


def test_undefined_memory_cells_are_excluded_and_counted() -> None:
    outs = [_outcome("a", 0, 0, 1.0, ub=0.0), _outcome("a", 1, 0, 1.0, ub=1.0)]
    m = aggregate(outs, 2)
    assert m["overall"]["undefined_memory_cells"] == 1
    assert m["per_user"]["a"]["0"]["memory_score"] is None
    assert m["overall"]["memory_score_all_cells"] == pytest.approx(1.0)
