"""Within-user learners: memoryless strategies fitted on the same user's other questions (docs/design.md §8).

A tell can be private to one user: every correct option of that user's questions shares a word, a slot
or a length rank, while another user's tell is different. Models fitted across users (``crossuser``)
average such tells away. The learners here are fitted per user and per question on that user's *other*
questions and then pick the held-out question's options, so a high score means the user's own questions
give each other away.

Only questions that share no required variable with the held-out one are used for fitting: a question
that asks about the same variable carries the variable's history in its correct options, and learning
from it would be a stale memory of the state (a ``prior`` strategy), not a tell.
"""

from __future__ import annotations

from collections.abc import Callable

from ..data.model import Environment, UserEnv
from .crossuser import Examples, Scores, fit_frequency, fit_markers, picker, shape_features
from .strategies import Strategy


def _independent(user: UserEnv, q: int) -> Examples:
    needed = set(user.qas[q].required_info)
    return [(user, k) for k, qa in enumerate(user.qas) if k != q and not needed & set(qa.required_info)]


def _fit_within(env: Environment, fit: Callable[[Examples], Callable[[UserEnv, int], list[float]]]) -> Scores:
    out: Scores = {}
    for user in env.users:
        for q in range(len(user.qas)):
            train = _independent(user, q)
            if train:
                out[(user.id, q)] = fit(train)(user, q)
    return out


def within_user_strategies(env: Environment) -> list[Strategy]:
    """The within-user learners for ``env`` (a question with no independent sibling is a uniform draw)."""
    return [
        Strategy("within_user_frequency", "options", "the option text or sentence correct most often in the "
                 "user's other questions", picker(_fit_within(env, fit_frequency)), "within-user"),
        Strategy("within_user_markers", "options", "the word, word pair, slot or length rank that most often "
                 "marks the correct option in the user's other questions",
                 picker(_fit_within(env, lambda train: fit_markers(train, shape_features))), "within-user"),
    ]
