"""Step 2: advice questions the user could ask again and again, each over a few changeable info types."""

from __future__ import annotations

from typing import Any

from ...config import HIGH_TEMPERATURE
from ...data import UserProfile
from .base import GenContext, ask_json
from .formats import arr, obj, snake, string
from .records import DraftQuestion, InfoType, QuestionsOut


def questions_schema(num_questions: int, num_states: int, num_choices: int) -> dict[str, Any]:
    """The reply schema: exactly the configured numbers of questions, info types and choices."""
    info = obj(info_type=string(), choices=arr(string(), num_choices, num_choices))
    question = obj(question=string(), required_info=arr(info, num_states, num_states))
    return obj(questions=arr(question, num_questions, num_questions))


def check_questions(value: dict[str, Any], num_questions: int, num_states: int, num_choices: int) -> str | None:
    """Counts, non-empty names and uniqueness (after snake_case normalisation), or the first problem."""
    qs = value["questions"]
    if len(qs) != num_questions:
        return f"expected {num_questions} questions, got {len(qs)}"
    seen_q: set[str] = set()
    for i, q in enumerate(qs, start=1):
        text = q["question"].strip()
        if text.lower() in seen_q:
            return f"question {i} repeats an earlier question"
        seen_q.add(text.lower())
        infos = q["required_info"]
        if len(infos) != num_states:
            return f"question {i} has {len(infos)} info types, expected {num_states}"
        names = [snake(t["info_type"]) for t in infos]
        if any(not n for n in names):
            return f"question {i} has an info type without a name"
        if len(set(names)) != len(names):
            return f"question {i} lists the same info type twice"
        for t, name in zip(infos, names, strict=True):
            choices = [snake(c) for c in t["choices"]]
            if len(choices) != num_choices:
                return f"info type {name!r} of question {i} has {len(choices)} values, expected {num_choices}"
            if any(not c for c in choices) or len(set(choices)) != len(choices):
                return f"info type {name!r} of question {i} needs {num_choices} distinct, non-empty values"
    return None


async def run_questions(ctx: GenContext, profile: UserProfile, total_months: int) -> QuestionsOut:
    """Ask for the questions at high temperature and validate their shape."""
    cfg = ctx.cfg
    n_q, n_s, n_c = cfg.num_questions, cfg.num_states_per_question, cfg.num_choices_per_state
    value = await ask_json(
        ctx, "questions", "gen_questions", questions_schema(n_q, n_s, n_c),
        lambda v: check_questions(v, n_q, n_s, n_c),
        max_tokens=100 + n_q * (60 + n_s * (25 + 12 * n_c)), temperature=HIGH_TEMPERATURE,
        profile=profile.formatted_str, start_date=cfg.start_date, total_months=total_months,
        num_questions=n_q, num_states=n_s, num_choices=n_c,
    )
    return QuestionsOut(questions=[
        DraftQuestion(
            question=q["question"].strip(),
            required_info=[
                InfoType(name=snake(t["info_type"]), choices=[snake(c) for c in t["choices"]])
                for t in q["required_info"]
            ],
        )
        for q in value["questions"]
    ])
