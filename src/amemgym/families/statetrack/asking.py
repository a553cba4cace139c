"""Evaluation prompts and reply parsing: overall answers, the state probe, the upper bound (docs/design.md §5)."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from typing import Any

from ...llm.parsing import parse_choice, parse_json_reply
from ...prompts import render
from ...seeding import derive_seed
from .data.model import QA, UserEnv


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
    """The value the reply gives for each required variable (None when missing or not a schema value).

    A reply that spells a value exactly is that value. Otherwise case, spaces, hyphens, underscores and a
    final full stop are ignored, but only where that leaves one schema value: a schema holding both ``High``
    and ``high`` (or ``b 1`` and ``b_1``) reads a loose spelling of either as no value, never as the other.
    """
    data = parse_json_reply(reply)
    out: dict[str, str | None] = {}
    for var in qa.required_info:
        got = data.get(var) if isinstance(data, dict) else None
        if not isinstance(got, str | int | float) or isinstance(got, bool):
            out[var] = None
            continue
        values = user.state_schema[var]
        exact = next((v for v in (str(got), str(got).strip()) if v in values), None)
        if exact is not None:
            out[var] = exact
            continue
        loose = [v for v in values if _norm(v) == _norm(got)]
        out[var] = loose[0] if len(loose) == 1 else None
    return out


@dataclass(frozen=True)
class Answer:
    """A parsed multiple-choice answer, under amemgym's strict rule and under the original release's rule.

    Attributes:
        choice: the 1-based option picked under the strict rule, or None.
        status: ``ok``, ``unparseable`` or ``out_of_range``.
        original_choice: the 1-based option the original release's rule picks (see
            :func:`original_rule_choice`); equals ``choice`` when the reply was valid.
        original_random: whether ``original_choice`` came from the random draw.
    """

    choice: int | None
    status: str
    original_choice: int
    original_random: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def original_rule_choice(reply: str, num_choices: int, rng_seed: int) -> tuple[int, bool]:
    """The option the original release picks for ``reply``, and whether it was drawn at random.

    The original indexed the options list with ``answer - 1`` in Python, so any integer that indexes the
    list counts, negative indices included: ``{"answer": 0}`` is the last option, ``-1`` the one before it
    (a JSON ``true`` / ``false`` behave as 1 / 0). Anything else (no JSON object with an ``answer``
    integer, or an index past either end) is replaced by a uniformly random option; here the draw is
    seeded so that it is reproducible.
    """
    data = parse_json_reply(reply)
    raw = data.get("answer") if isinstance(data, dict) else None
    if isinstance(raw, int) and -num_choices < raw <= num_choices:
        return (raw - 1) % num_choices + 1, False
    return random.Random(rng_seed).randint(1, num_choices), True


def parse_answer(reply: str, num_choices: int, rng_seed: int) -> Answer:
    """Parse an option number under both rules: strict (invalid scores wrong) and the original's."""
    choice, status = parse_choice(reply, num_choices)
    original, drawn = original_rule_choice(reply, num_choices, rng_seed)
    return Answer(choice, status, original, drawn)


def option_state(qa: QA, choice: Any) -> list[str] | None:
    """The state of answer option ``choice`` (1-based) of ``qa``; None for no valid option."""
    valid = isinstance(choice, int) and not isinstance(choice, bool) and 1 <= choice <= len(qa.answer_choices)
    return list(qa.answer_choices[choice - 1].state) if valid else None


def option_score(qa: QA, choice: Any, truth: list[str]) -> float:
    """1.0 when answer option ``choice`` of ``qa`` holds the state ``truth``, else 0.0 (no valid option
    included): the score of an answer, and what a reader holds a recorded answer's score to."""
    return 1.0 if option_state(qa, choice) == truth else 0.0


def score_overall(user: UserEnv, period: int, q: int, reply: str, seed: int) -> dict[str, Any]:
    """Parse and score one overall answer; the record fields every evaluation path writes.

    ``seed`` is the per-user seed; the original rule's random draw is derived from it, the period and the
    question. ``score`` follows the strict rule, ``score_original_rule`` the original release's.
    """
    qa = user.qas[q]
    ans = parse_answer(reply, len(qa.answer_choices), derive_seed(seed, "overall", period, q))
    truth = [user.periods[period].state[v] for v in qa.required_info]
    return {
        "question": q, "reply": reply, **ans.to_dict(), "gold": user.correct_choice(q, period) + 1,
        "n_choices": len(qa.answer_choices), "score": option_score(qa, ans.choice, truth),
        "score_original_rule": option_score(qa, ans.original_choice, truth),
    }


def score_probe(user: UserEnv, period: int, qa: QA, reply: str) -> tuple[dict[str, str | None], dict[str, bool]]:
    """The probe's parsed values and, per required variable, whether it named the current value."""
    values = parse_probe(reply, user, qa)
    state = user.periods[period].state
    return values, {v: values[v] == state[v] for v in qa.required_info}
