"""Feedback contents: option labels match what the agent saw, the truth, the memory, the revealed states."""

from __future__ import annotations

import re

import pytest

from amemgym.errors import ConfigError
from amemgym.evolve import feedback_builder, revealed_facts
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path


@pytest.fixture
def user():
    return load_environment(tiny_environment_path()).users[0]


def evaluation(user, period: int, choices: dict[int, int | None]) -> dict:
    """An evaluation record as the runner writes it (1-based choice and gold)."""
    qs = []
    for q in range(len(user.qas)):
        gold = user.correct_choice(q, period) + 1
        choice = choices.get(q, gold)
        qs.append({"question": q, "choice": choice, "status": "ok" if choice else "unparseable", "gold": gold,
                   "score": 1.0 if choice == gold else 0.0})
    return {"user": user.id, "period": period, "questions": qs}


def wrong_choice(user, q: int, period: int) -> int:
    gold = user.correct_choice(q, period) + 1
    return 1 if gold != 1 else 2


def test_complete_feedback_names_the_chosen_and_correct_options_by_the_labels_the_agent_saw(user) -> None:
    picked = wrong_choice(user, 0, 1)
    text = feedback_builder("complete").build(user, 1, evaluation(user, 1, {0: picked}), "latest: moving soon")
    gold = user.correct_choice(0, 1) + 1
    qa = user.qas[0]
    assert f"The assistant chose option {picked}; the correct option was option {gold} (wrong)." in text
    # The label printed before an option text is its 1-based position, as in the agent's evaluation prompt.
    labels = dict(re.findall(r"^   (\d+)\. (.*)$", text.split("Q2.")[0], flags=re.M))
    assert labels[str(gold)] == qa.answer_choices[gold - 1].answer
    assert labels[str(picked)] == qa.answer_choices[picked - 1].answer
    assert qa.answer_choices[gold - 1].state == [user.periods[1].state[v] for v in qa.required_info]


def test_complete_feedback_has_memory_and_revealed_changes(user) -> None:
    text = feedback_builder("complete").build(user, 1, evaluation(user, 1, {}), "latest: moving soon")
    assert "latest: moving soon" in text
    var, change = next(iter(user.periods[1].updates.items()))
    assert f"- {var}: {change.new} (changed from {change.old})" in text
    assert text.count("(right)") == len(user.qas)


def test_invalid_reply_is_reported_as_no_option(user) -> None:
    text = feedback_builder("complete").build(user, 0, evaluation(user, 0, {1: None}), "")
    assert "The assistant chose no valid option (reply was unparseable)" in text


def test_question_only_feedback_withholds_options_grades_and_states(user) -> None:
    text = feedback_builder("question-only").build(user, 1, evaluation(user, 1, {}), "latest: moving soon")
    assert all(qa.query in text for qa in user.qas)
    assert "latest: moving soon" in text
    new_values = {c.new for c in user.periods[1].updates.values()}
    assert "correct option" not in text and not any(v in text for v in new_values)
    assert not any(c.answer in text for qa in user.qas for c in qa.answer_choices)


def test_none_feedback_builds_nothing(user) -> None:
    assert feedback_builder("none").build(user, 1, evaluation(user, 1, {}), "x") is None


def test_unknown_feedback_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="question-only"):
        feedback_builder("partial")


def test_revealed_facts_come_from_the_sessions_exposed_states(user) -> None:
    exposed = {k: v for s in user.periods[0].sessions for k, v in s.exposed_states.items()}
    facts = revealed_facts(user, 0)
    assert {(f.variable, f.value) for f in facts} == set(exposed.items())
    assert all(f.previous is None for f in facts)
