"""Step 2: advice questions the user could ask again and again, each over a few changeable info types."""

from __future__ import annotations

from typing import Any

from .....config import HIGH_TEMPERATURE
from ...data import UserProfile
from .base import GenContext, StepFailure, ask_json
from .formats import arr, obj, snake, string
from .records import DraftQuestion, InfoType, QuestionsOut


def questions_schema(num_questions: int, num_states: int, num_choices: int) -> dict[str, Any]:
    """The reply schema: exactly the configured numbers of questions, info types and choices."""
    info = obj(info_type=string(), choices=arr(string(), num_choices, num_choices))
    question = obj(question=string(), required_info=arr(info, num_states, num_states))
    return obj(questions=arr(question, num_questions, num_questions))


def question_problem(q: dict[str, Any], num_states: int, num_choices: int) -> str | None:
    """What is wrong with one question (its info types and their values), or None."""
    infos = q["required_info"]
    if len(infos) != num_states:
        return f"has {len(infos)} info types, expected {num_states}"
    names = [snake(t["info_type"]) for t in infos]
    if any(not n for n in names):
        return "has an info type without a name"
    if len(set(names)) != len(names):
        return "lists the same info type twice"
    for t, name in zip(infos, names, strict=True):
        choices = [snake(c) for c in t["choices"]]
        if len(choices) != num_choices:
            return f"has {len(choices)} values for {name!r}, expected {num_choices}"
        if any(not c for c in choices) or len(set(choices)) != len(choices):
            return f"needs {num_choices} distinct, non-empty values for {name!r}"
    return None


async def run_questions(ctx: GenContext, profile: UserProfile, total_months: int) -> QuestionsOut:
    """Ask for the questions at high temperature, keeping the valid ones until there are enough.

    Each round asks for the full set; questions that break a rule are dropped and the good ones kept, so a
    small model that gets one question in three wrong still finishes. The unit counts as first-try only
    when the first reply was complete and valid.
    """
    cfg = ctx.cfg
    n_q, n_s, n_c = cfg.num_questions, cfg.num_states_per_question, cfg.num_choices_per_state
    stats = ctx.step("questions")
    kept: list[dict[str, Any]] = []
    last_problem = ""
    for round_ in range(ctx.limits.attempts):
        calls = stats.calls
        try:
            value = await ask_json(
                ctx, "questions", "gen_questions", questions_schema(n_q, n_s, n_c), None,
                max_tokens=100 + n_q * (60 + n_s * (25 + 12 * n_c)), key=(round_,) if round_ else (),
                temperature=HIGH_TEMPERATURE, count_unit=False, profile=profile.formatted_str,
                start_date=cfg.start_date, total_months=total_months, num_questions=n_q, num_states=n_s,
                num_choices=n_c,
            )
        except StepFailure:
            stats.add_unit("failed")
            raise
        for q in value["questions"]:
            repeated = any(q["question"].strip().lower() == k["question"].strip().lower() for k in kept)
            problem = "repeats an earlier question" if repeated else question_problem(q, n_s, n_c)
            if problem:
                last_problem = problem
            elif len(kept) < n_q:
                kept.append(q)
        if len(kept) == n_q:
            stats.add_unit("first_try" if round_ == 0 and stats.calls - calls == 1 else "after_retry")
            return QuestionsOut(questions=[_draft(q) for q in kept])
    stats.add_unit("failed")
    raise StepFailure("questions", f"only {len(kept)} of {n_q} valid questions after {ctx.limits.attempts} rounds "
                                   f"(last problem: a question {last_problem})")


def _draft(q: dict[str, Any]) -> DraftQuestion:
    return DraftQuestion(
        question=q["question"].strip(),
        required_info=[
            InfoType(name=snake(t["info_type"]), choices=[snake(c) for c in t["choices"]]) for t in q["required_info"]
        ],
    )
