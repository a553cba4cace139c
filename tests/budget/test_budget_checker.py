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
    # Marks are part of the letter outside Latin (found by probing: バス read as パス, राम as रीम).
    others = ["バス", "パス", "राम", "रीम", "東京銀行", "大阪銀行"]
    assert not check(q("name", "バス"), "パス", others).correct
    assert not check(q("name", "राम"), "रीम", others).correct
    assert check(q("name", "東京銀行"), "答えは東京銀行です。", others).correct  # no spaces around the name
    assert not check(q("name", "東京銀行"), "東京銀行と大阪銀行", others).correct  # still one answer only


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


def kq(kind: str, answer_type: str, gold: object, text: str = "?") -> Question:
    return Question(id="q1", kind=kind, text=text, answer_type=answer_type, gold=gold,  # type: ignore[arg-type]
                    spec=QuestionSpec(), needs=[], candidates=[])


def test_a_change_stated_in_the_wrong_direction_is_wrong() -> None:
    """Found by probing: "decreased by 7742" was credited for a gold of +7742."""
    assert not ok(kq("delta", "float", 7742.0), "It decreased by 7742.")
    assert not ok(kq("comparison", "int", 305), "It is 305 lower.")
    assert ok(kq("delta", "float", -7742.0), "It decreased by 7742.")
    assert ok(kq("delta", "float", 7742.0), "It rose by 7742.")
    assert ok(kq("retrieval", "int", 50), "It fell to 50.")  # a value, not a change


def test_a_small_gold_is_not_matched_by_the_absolute_floor() -> None:
    """Found by probing: "0.01" matched a ratio of 0.0003 (33 times off) through a fixed 0.01 floor."""
    assert not ok(kq("ratio", "float", 0.0003), "0.01")
    assert ok(kq("ratio", "float", 0.0003), "0.0003")
    assert ok(kq("delta", "float", 0.0), "0.005")  # near zero the floor still holds
    assert ok(kq("ratio", "float", 1.25), "1.26")


def test_the_earlier_value_answers_a_counterfactual_even_beside_the_revision() -> None:
    cf = kq("counterfactual", "float", 48.3)
    assert ok(cf, "It was first reported as $48.3M (later revised to $36.0M).")
    assert ok(cf, "Originally $48.3M; it is now $36.0M.")
    assert ok(kq("retrieval", "float", 36.0), "$36.0M (previous: $48.3M)")


def test_restating_the_question_is_not_a_second_answer() -> None:
    assert ok(kq("relation_lookup", "name", "Blue Labs", "Which company does Apex Works compete with?"),
              "Apex Works competes with Blue Labs.")
    assert not ok(kq("relation_lookup", "name", "Blue Labs", "Which company does Apex Works compete with?"),
                  "Apex Works competes with Cinder Group.")
    assert ok(kq("multi_count", "int", 5, "How many of the 16 companies have over 40 offices?"),
              "5 of the 16 companies")
    assert ok(kq("retrieval", "int", 36, "How many offices did Blue Labs have in 2023?"), "36 offices as of 2023")
    assert ok(kq("multi_count", "int", 16, "How many of the 16 companies are listed?"), "16")


def test_dates_and_refusals_in_common_forms() -> None:
    for written in ("March 12th, 2014", "Mar 12, 2014", "12th of March 2014", "2014/03/12", "2014-3-12"):
        assert ok(q("date", "2014-03-12"), written), written
    assert ok(q("refuse", None), "N/A")
    assert ok(q("refuse", None), "That company is not in memory.")
