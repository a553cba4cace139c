"""Recent-window strategies and the honest recency reader they are judged against (docs/design.md §8).

An agent with no long-term memory can still read the openings of the latest period or two. That is
legitimate: it is exactly what a short-memory agent does. What it must not be able to do is get more
out of that text than the facts it states. So each window strategy (surface similarity of the options to
the window's openings, no state) is compared, item by item, with an **honest recency reader**: an agent
that knows exactly the (variable, value) facts stated in the window and nothing else, and draws
uniformly among the options those facts allow. Each window strategy starts from that reader's options and
breaks the tie by surface similarity to the window's openings (word overlap or embedding cosine), so it
is the honest reader plus whatever the wording adds: with no tell its expected accuracy is the reader's,
and one that beats the reader is reading a tell in the text, not the facts.

The facts of a window come from the text reader when one ran (``exposure``: the pack's phrasings or the
judge), otherwise from the file's metadata (each period's updates and each session's ``exposed_states``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....textsim import jaccard, words
from ..data.model import UserEnv
from .strategies import Pick, Strategy, TextVectors, matching_options, top_options

#: Window sizes, in periods (the current period and the one before it).
WINDOWS = (1, 2)

#: The facts stated by one period's openings: (user id, period) -> {(variable, value)}.
Stated = dict[tuple[str, int], set[tuple[str, str]]]


def window_openings(user: UserEnv, period: int, size: int) -> list[str]:
    """Opening utterances of periods ``period - size + 1 .. period``."""
    return [s.query for p in user.periods[max(0, period - size + 1): period + 1] for s in p.sessions]


def metadata_facts(user: UserEnv, period: int) -> set[tuple[str, str]]:
    """The facts the file's metadata says the period's openings state (its updates and exposed values)."""
    p = user.periods[period]
    return ({(v, u.new) for v, u in p.updates.items()}
            | {(v, x) for s in p.sessions for v, x in s.exposed_states.items()})


def allowed_options(stated: Stated | None, size: int) -> Callable[[UserEnv, int, int], tuple[int, ...]]:
    """The options the honest reader of a ``size``-period window cannot rule out, per (user, period, question).

    The reader believes the latest value stated for each variable in the window; every option is allowed
    when the window says nothing about the question.
    """
    cache: dict[tuple[str, int], dict[str, str]] = {}

    def facts(user: UserEnv, period: int) -> dict[str, str]:
        key = (user.id, period)
        if key not in cache:
            known: dict[str, str] = {}
            for p in range(max(0, period - size + 1), period + 1):
                # A period no reader could read falls back to what the metadata says it states.
                read = stated is not None and (user.id, p) in stated
                found = stated[(user.id, p)] if stated is not None and read else metadata_facts(user, p)
                # A later period's statement of a variable replaces an earlier one.
                known.update(dict(sorted(found)))
            cache[key] = known
        return cache[key]

    def allowed(user: UserEnv, period: int, question: int) -> tuple[int, ...]:
        known = facts(user, period)
        qa = user.qas[question]
        return tuple(i for i, c in enumerate(qa.answer_choices)
                     if all(known.get(v, x) == x for v, x in zip(qa.required_info, c.state, strict=True)))

    return allowed


def recency_reader(stated: Stated | None, size: int) -> Callable[[UserEnv, int, int], float]:
    """Expected accuracy of the honest reader of a ``size``-period window, per (user, period, question)."""
    allowed = allowed_options(stated, size)

    def expected(user: UserEnv, period: int, question: int) -> float:
        ok = allowed(user, period, question)
        return len(set(ok) & set(matching_options(user, period, question))) / len(ok) if ok else 0.0

    return expected


def window_strategies(vectors: TextVectors, stated: Stated | None) -> list[Strategy]:
    """The honest reader of the last 1 and 2 periods, breaking its ties by word overlap or embedding cosine
    of each allowed option with the window's openings."""
    out: list[Strategy] = []
    for size in WINDOWS:
        allowed = allowed_options(stated, size)
        bag: dict[tuple[str, int], frozenset[str]] = {}
        centre: dict[tuple[str, int], np.ndarray | None] = {}

        def overlap(user: UserEnv, p: int, q: int, i: int, size: int = size,
                    bag: dict[tuple[str, int], frozenset[str]] = bag) -> float:
            if (user.id, p) not in bag:
                bag[(user.id, p)] = frozenset().union(*(words(t) for t in window_openings(user, p, size)))
            return jaccard(bag[(user.id, p)], words(user.qas[q].answer_choices[i].answer))

        def embed(user: UserEnv, p: int, q: int, i: int, size: int = size,
                  centre: dict[tuple[str, int], np.ndarray | None] = centre) -> float:
            if (user.id, p) not in centre:
                centre[(user.id, p)] = vectors.centroid(window_openings(user, p, size))
            c = centre[(user.id, p)]
            return 0.0 if c is None else float(c @ vectors.vector(user.qas[q].answer_choices[i].answer))

        span = "the current period" if size == 1 else f"the last {size} periods"
        out += [
            Strategy(f"window{size}_overlap", "window", f"the options the facts of {span} allow, the one with "
                     "the most word overlap with its openings", _within(allowed, overlap), "window"),
            Strategy(f"window{size}_embedding", "window", f"the options the facts of {span} allow, the one "
                     "closest (cosine) to its openings", _within(allowed, embed), "window"),
        ]
    return out


def _within(allowed: Callable[[UserEnv, int, int], tuple[int, ...]],
            score: Callable[[UserEnv, int, int, int], float]) -> Pick:
    def pick(user: UserEnv, period: int, question: int) -> tuple[int, ...]:
        ok = allowed(user, period, question) or tuple(range(len(user.qas[question].answer_choices)))
        scores = [score(user, period, question, i) for i in ok]
        return tuple(ok[i] for i in top_options(scores))

    return pick
