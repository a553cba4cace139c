"""Evaluation prompts and reply parsing: overall answers, the state probe, the upper bound (SPEC §5)."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from typing import Any

from ..data.model import QA, UserEnv
from ..llm.parsing import parse_choice, parse_json_reply
from ..prompts import render


def choices_text(qa: QA) -> str:
    """Numbered answer texts, 1-based."""
    return "\n".join(f"{i}. {c.answer}" for i, c in enumerate(qa.answer_choices, start=1))


def overall_prompt(qa: QA) -> str:
    """The prompt that asks the agent to pick the option fitting the user's current situation."""
    return render("overall_question", query=qa.query, choices=choices_text(qa))


def state_text(variables: list[str], values: list[str]) -> str:
    """``- variable: value`` lines."""
    return "\n".join(f"- {v}: {x}" for v, x in zip(variables, values, strict=True))


def upper_bound_prompt(qa: QA, combo: tuple[str, ...]) -> str:
    """The bare-model prompt with the required state given explicitly."""
    return render("upper_bound", query=qa.query, state=state_text(qa.required_info, list(combo)),
                  choices=choices_text(qa))


def probe_prompt(user: UserEnv, qa: QA) -> str:
    """Ask which value of each required variable holds now."""
    lines = "\n".join(f"- {v}: one of {', '.join(user.state_schema[v])}" for v in qa.required_info)
    example = json.dumps({v: "..." for v in qa.required_info})
    return render("probe", variables=lines, example=example)


def _norm(value: Any) -> str:
    return str(value).strip().strip(".").lower().replace(" ", "_").replace("-", "_")


def parse_probe(reply: str, user: UserEnv, qa: QA) -> dict[str, str | None]:
    """The value the reply gives for each required variable (None when missing or not a schema value)."""
    data = parse_json_reply(reply)
    out: dict[str, str | None] = {}
    for var in qa.required_info:
        got = data.get(var) if isinstance(data, dict) else None
        canon = {_norm(v): v for v in user.state_schema[var]}
        out[var] = canon.get(_norm(got)) if isinstance(got, str | int | float) and not isinstance(got, bool) else None
    return out


@dataclass(frozen=True)
class Answer:
    """A parsed multiple-choice answer.

    Attributes:
        choice: the 1-based option picked, or None.
        status: ``ok``, ``unparseable`` or ``out_of_range``.
        fallback_choice: the original release's rule for a bad reply (a random option, seeded); equals
            ``choice`` when the reply was valid.
    """

    choice: int | None
    status: str
    fallback_choice: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def parse_answer(reply: str, num_choices: int, rng_seed: int) -> Answer:
    """Parse an option number; an invalid reply scores wrong, and the original's random draw is kept aside."""
    choice, status = parse_choice(reply, num_choices)
    fallback = choice if choice is not None else random.Random(rng_seed).randint(1, num_choices)
    return Answer(choice, status, fallback)


def score_overall(user: UserEnv, period: int, q: int, reply: str, seed: int) -> dict[str, Any]:
    """Parse and score one overall answer; the record fields every evaluation path writes.

    ``seed`` is the per-user seed; the fallback draw is derived from it, the period and the question.
    """
    from ..seeding import derive_seed

    qa = user.qas[q]
    ans = parse_answer(reply, len(qa.answer_choices), derive_seed(seed, "overall", period, q))
    truth = [user.periods[period].state[v] for v in qa.required_info]
    picked = qa.answer_choices[ans.choice - 1].state if ans.choice else None
    fallback = qa.answer_choices[ans.fallback_choice - 1].state
    return {
        "question": q, "reply": reply, **ans.to_dict(), "gold": user.correct_choice(q, period) + 1,
        "n_choices": len(qa.answer_choices), "score": 1.0 if picked == truth else 0.0,
        "score_with_random_fallback": 1.0 if fallback == truth else 0.0,
    }


def score_probe(user: UserEnv, period: int, qa: QA, reply: str) -> tuple[dict[str, str | None], dict[str, bool]]:
    """The probe's parsed values and, per required variable, whether it named the current value."""
    values = parse_probe(reply, user, qa)
    state = user.periods[period].state
    return values, {v: values[v] == state[v] for v in qa.required_info}
