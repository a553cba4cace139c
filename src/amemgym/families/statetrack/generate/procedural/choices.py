"""Answer choices of a question: experienced combinations, padding, and a seeded order."""

from __future__ import annotations

import random
from collections import Counter
from itertools import product
from typing import Literal

from ...data.model import AnswerChoice
from .plan import UserQuestion

Combo = tuple[str, ...]

# Candidate padding sets tried per question; the one whose options leak least is kept.
_PADDING_TRIES = 48
# Every question gets at least this many padding options when unused combinations exist: a set of
# only experienced combinations leaks through its value statistics (values held for long recur in
# several experienced combinations), and padding is what can balance that.
MIN_PADDING = 1


def build_choices(
    rng: random.Random,
    uq: UserQuestion,
    values: dict[str, tuple[str, ...]],
    states: list[dict[str, str]],
    min_variants: int,
) -> list[AnswerChoice]:
    """The options of one question for one user.

    Every value combination that some period's state takes is an ``experience`` option; unused
    combinations are added as ``random`` options until there are at least ``min_variants`` (and at
    least :data:`MIN_PADDING` of them), and the options are shuffled. Among candidate paddings, the one
    is kept under which the correct option is least predictable from value statistics alone: a
    strategy that picks the option whose values recur most (or least) among the options should score
    what a random guess scores, period by period.

    Args:
        rng: the structure random stream.
        uq: the question as the user is asked it.
        values: each variable's values for this user.
        states: every period's state, in order.
        min_variants: the minimum number of options.
    """
    golds = Counter(tuple(state[v] for v in uq.variables) for state in states)
    seen: list[Combo] = list(golds)
    unused = [c for c in product(*(values[v] for v in uq.variables)) if c not in seen]
    need = min(len(unused), max(min_variants - len(seen), MIN_PADDING))
    padding: list[Combo] = []
    if need:
        best: tuple[float, list[Combo]] | None = None
        for _ in range(_PADDING_TRIES):
            cand = rng.sample(unused, need)
            score = _leak(seen + cand, golds)
            if best is None or score < best[0]:
                best = (score, cand)
        assert best is not None
        padding = best[1]
    options: list[tuple[Combo, Literal["experience", "random"]]] = [(c, "experience") for c in seen]
    options += [(c, "random") for c in padding]
    rng.shuffle(options)
    return [
        AnswerChoice(state=list(c), answer=uq.question.answer(uq.variables, c), type=kind)
        for c, kind in options
    ]


def _leak(options: list[Combo], golds: Counter[Combo]) -> float:
    """How far value-frequency strategies get above a random guess on these options.

    Scores the "most central" and "least central" picks (centrality = how many options share each of
    an option's values) and the mean centrality rank of the correct option, over every period
    (``golds`` counts the periods each combination is correct in).
    """
    n = len(options)
    counts: dict[tuple[int, str], int] = {}
    for c in options:
        for key in enumerate(c):
            counts[key] = counts.get(key, 0) + 1
    cent = {c: sum(counts[key] for key in enumerate(c)) for c in options}
    spread = Counter(cent.values())
    top, bottom = max(spread), min(spread)
    most = least = rank = 0.0
    for g, times in golds.items():
        x = cent[g]
        most += times / spread[top] if x == top else 0.0
        least += times / spread[bottom] if x == bottom else 0.0
        below = sum(k for v, k in spread.items() if v < x)
        rank += times * (below + 0.5 * (spread[x] - 1)) / (n - 1)
    k = sum(golds.values())
    return abs(most / k - 1 / n) + abs(least / k - 1 / n) + 0.5 * abs(rank / k - 0.5)
