"""The rule checker: tolerances, names, refusals, and replies that try to hedge."""

from __future__ import annotations

from amemgym.families.budget.checker import check
from amemgym.families.budget.model import Question, QuestionSpec

NAMES = ["Apex Works", "Blue Labs", "Cinder Group", "Apex Blue Labs"]


def q(answer_type: str, gold: object, candidates: list[str] | None = None) -> Question:
    return Question(id="q1", kind="retrieval", text="?", answer_type=answer_type, gold=gold,  # type: ignore[arg-type]
                    spec=QuestionSpec(), needs=[], candidates=candidates or [])


def ok(question: Question, reply: str | None) -> bool:
    return check(question, reply, NAMES).correct


def test_integers_are_exact() -> None:
    assert ok(q("int", 1234), "1,234 staff")
    assert not ok(q("int", 1234), "1,235")


def test_floats_within_two_percent() -> None:
    assert ok(q("float", 100.0), "$101.9M")
    assert not ok(q("float", 100.0), "$102.5M")


def test_negative_numbers_and_stated_decreases() -> None:
    assert ok(q("int", -50), "-50")
    assert ok(q("int", -50), "It decreased by 50.")
    assert not ok(q("int", -50), "It increased by 50.")


def test_listing_several_numbers_is_wrong_even_with_the_gold_among_them() -> None:
    assert not ok(q("int", 7), "7 or 8")
    assert not ok(q("float", 40.0), "; ".join(str(x) for x in (10.0, 40.0, 25.0, 5.0)))


def test_names_are_normalised() -> None:
    assert ok(q("name", "Blue Labs"), "  the BLUE labs. ")


def test_names_in_any_script_are_read() -> None:
    """Found by probing: normalising kept ASCII only, so a kanji name became "" and its exact gold scored wrong."""
    names = ["屿巫 伣社", "Ёлка Групп", "Café Nord"]
    assert check(q("name", "屿巫 伣社"), "屿巫 伣社", names).correct
    assert check(q("name", "Ёлка Групп"), "It is ёлка групп.", names).correct
    assert check(q("name", "Café Nord"), "cafe nord", names).correct
    assert not check(q("name", "屿巫 伣社"), "Ёлка Групп", names).correct


def test_listing_several_names_is_wrong() -> None:
    assert not ok(q("name", "Blue Labs"), "Apex Works, Blue Labs, Cinder Group")
    assert not ok(q("name", "Blue Labs"), "Blue Labs or Cinder Group")


def test_a_longer_name_containing_the_gold_is_a_different_answer() -> None:
    assert not ok(q("name", "Blue Labs"), "Apex Blue Labs")


def test_text_answers_reject_several_candidates() -> None:
    question = q("text", "NYSE", ["NYSE", "LSE", "TSX"])
    assert ok(question, "nyse")
    assert not ok(question, "NYSE, LSE or TSX")


def test_refusals_only_for_abstention_and_without_digits() -> None:
    assert ok(q("refuse", None), "I don't know; it is not in my memory.")
    assert not ok(q("refuse", None), "I don't know, maybe 42")
    assert not ok(q("refuse", None), "Blue Labs")
    assert not ok(q("int", 5), "I don't know")


def test_dates_in_several_formats_but_only_one() -> None:
    question = q("date", "2014-03-12")
    assert ok(question, "March 12, 2014")
    assert ok(question, "2014-03-12")
    assert ok(question, "12 March 2014")
    assert not ok(question, "March 12, 2014 or April 1, 2015")


def test_a_skipped_question_is_wrong() -> None:
    assert not ok(q("int", 1), None)
    assert not ok(q("int", 1), "   ")


def test_a_current_value_with_a_labelled_previous_value_is_one_answer() -> None:
    # Before: "510 (revised from 480)" was two numbers, so wrong, and never sent to the judge.
    for reply in ("510 (revised from 480)", "510, was 480", "Previously 480; now 510.", "510 staff (up from 480)",
                  "It changed from 480 to 510.", "510 (originally 480)"):
        assert ok(q("int", 510), reply), reply
    assert not ok(q("int", 480), "510 (revised from 480)")  # the committed value is the current one


def test_hedges_and_lists_stay_wrong_even_with_a_label() -> None:
    for reply in ("510 or 480 (was 480)", "either 510 or 520, was 480", "between 500 and 520 (previously 480)",
                  "510, 520 (was 480)", "510 (was 480, was 470)", "510 520 530", "maybe 510, was 480"):
        verdict = check(q("int", 510), reply, NAMES)
        assert not verdict.correct and verdict.listed, reply
