"""Strategies that pick an option without knowing the current state, and the two reference agents (docs/design.md §8).

Every strategy is a pure function ``pick(user, period, question) -> option index`` (0-based). A strategy
that has no preference between several options draws among them with a random stream seeded by its
name and the item, so a tie never turns into a hidden "always the first option" bias, and the same seed
gives the same picks in any order.

Kinds, which decide how the suite judges a strategy:

- ``options``: looks only at the question and its answer texts (position, length, word overlap).
- ``context``: also looks at the user's opening utterances so far (surface similarity, no state).
- ``prior``: knows which options were correct at *earlier* periods, never the current one.
- ``random``: a uniform draw; its expected accuracy is the analytic baseline.
- ``reference``: perfect memory (knows the state) and no memory (a uniform draw), whose scores are
  invariants of well-formed data.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..data.model import UserEnv
from ..seeding import derive_seed
from ..textsim import jaccard, words

Pick = Callable[[UserEnv, int, int], int]
Kind = Literal["options", "context", "prior", "random", "reference"]
Embed = Callable[[Sequence[str]], np.ndarray]



@dataclass(frozen=True)
class Strategy:
    """A named way of picking an option.

    Attributes:
        name: short identifier used in tables, JSON and error messages.
        kind: how the suite judges it (see the module docstring).
        description: one line for the report.
        pick: ``(user, period, question) -> 0-based option index``.
    """

    name: str
    kind: Kind
    description: str
    pick: Pick


def argmax_tiebreak(scores: Sequence[float], rng: random.Random) -> int:
    """Index of the highest score; ties (within 1e-9) are broken uniformly with ``rng``."""
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s >= best - 1e-9]
    return top[0] if len(top) == 1 else rng.choice(top)


def _rng(seed: int, name: str, user: UserEnv, question: int, period: int | None = None) -> random.Random:
    # Options-only strategies tie-break per question (not per period): their view never changes over time.
    return random.Random(derive_seed(seed, name, user.id, question, "" if period is None else period))


def openings_until(user: UserEnv, period: int) -> list[str]:
    """Opening utterances of every session of periods 0..``period``, in order."""
    return [s.query for p in user.periods[: period + 1] for s in p.sessions]


def _by_option_score(name: str, seed: int, score: Callable[[UserEnv, int, int, int], float],
                     per_period: bool) -> Pick:
    def pick(user: UserEnv, period: int, question: int) -> int:
        n = len(user.qas[question].answer_choices)
        scores = [score(user, period, question, i) for i in range(n)]
        return argmax_tiebreak(scores, _rng(seed, name, user, question, period if per_period else None))

    return pick


class TextVectors:
    """Embeddings of texts, computed in batches and kept for reuse.

    Args:
        embed: maps a list of texts to an ``(n, dim)`` array of L2-normalised rows.
    """

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._cache: dict[str, np.ndarray] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed every text not seen yet in one batch (much faster than one call per text)."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            vecs = np.asarray(self._embed(todo), dtype=np.float32)
            for text, vec in zip(todo, vecs, strict=True):
                self._cache[text] = vec

    def vector(self, text: str) -> np.ndarray:
        """The embedding of one text."""
        if text not in self._cache:
            self.prepare([text])
        return self._cache[text]

    def centroid(self, texts: Sequence[str]) -> np.ndarray | None:
        """The normalised mean of several texts' embeddings (a whole conversation without truncation).

        Returns:
            The vector, or None for no texts.
        """
        if not texts:
            return None
        self.prepare(texts)
        mean = np.mean([self._cache[t] for t in texts], axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm > 0 else mean


def shortcut_strategies(seed: int, vectors: TextVectors) -> list[Strategy]:
    """Every strategy that needs no knowledge of the current state, plus uniform random."""

    def answer(user: UserEnv, q: int, i: int) -> str:
        return user.qas[q].answer_choices[i].answer

    def q_overlap(user: UserEnv, p: int, q: int, i: int) -> float:
        return jaccard(words(user.qas[q].query), words(answer(user, q, i)))

    def q_embed(user: UserEnv, p: int, q: int, i: int) -> float:
        return float(vectors.vector(user.qas[q].query) @ vectors.vector(answer(user, q, i)))

    # The conversation so far is the same for every question and option of a (user, period): build it once.
    conv_words: dict[tuple[str, int], frozenset[str]] = {}
    conv_vecs: dict[tuple[str, int], np.ndarray | None] = {}

    def conv_overlap(user: UserEnv, p: int, q: int, i: int) -> float:
        key = (user.id, p)
        if key not in conv_words:
            conv_words[key] = frozenset().union(*(words(t) for t in openings_until(user, p)))
        return jaccard(conv_words[key], words(answer(user, q, i)))

    def conv_embed(user: UserEnv, p: int, q: int, i: int) -> float:
        key = (user.id, p)
        if key not in conv_vecs:
            conv_vecs[key] = vectors.centroid(openings_until(user, p))
        centre = conv_vecs[key]
        return 0.0 if centre is None else float(centre @ vectors.vector(answer(user, q, i)))

    def prior_combo(user: UserEnv, p: int, q: int, i: int) -> float:
        qa = user.qas[q]
        seen = Counter(tuple(user.periods[e].state[v] for v in qa.required_info) for e in range(p))
        return float(seen[tuple(qa.answer_choices[i].state)])

    def prior_values(user: UserEnv, p: int, q: int, i: int) -> float:
        # Pools every variable's history (so evidence from other questions' variables counts too).
        qa = user.qas[q]
        return float(sum(1 for e in range(p) for v, x in zip(qa.required_info, qa.answer_choices[i].state,
                                                                 strict=True)
                         if user.periods[e].state.get(v) == x))

    def constant(name: str, fn: Callable[[int], int]) -> Pick:
        return lambda user, p, q: fn(len(user.qas[q].answer_choices))

    def uniform(user: UserEnv, p: int, q: int) -> int:
        return _rng(seed, "random", user, q, p).randrange(len(user.qas[q].answer_choices))

    return [
        Strategy("first", "options", "always the first option", constant("first", lambda n: 0)),
        Strategy("last", "options", "always the last option", constant("last", lambda n: n - 1)),
        Strategy("longest", "options", "the option with the longest text",
                 _by_option_score("longest", seed, lambda u, p, q, i: len(answer(u, q, i)), False)),
        Strategy("shortest", "options", "the option with the shortest text",
                 _by_option_score("shortest", seed, lambda u, p, q, i: -len(answer(u, q, i)), False)),
        Strategy("question_overlap", "options", "most word overlap (Jaccard) with the question",
                 _by_option_score("question_overlap", seed, q_overlap, False)),
        Strategy("question_embedding", "options", "highest embedding cosine with the question",
                 _by_option_score("question_embedding", seed, q_embed, False)),
        Strategy("conversation_overlap", "context", "most word overlap (Jaccard) with all openings so far",
                 _by_option_score("conversation_overlap", seed, conv_overlap, True)),
        Strategy("conversation_embedding", "context", "highest cosine with the mean embedding of openings so far",
                 _by_option_score("conversation_embedding", seed, conv_embed, True)),
        Strategy("prior_question", "prior", "combination correct most often at earlier periods, same question",
                 _by_option_score("prior_question", seed, prior_combo, True)),
        Strategy("prior_values", "prior", "values held most often at earlier periods, pooled over variables",
                 _by_option_score("prior_values", seed, prior_values, True)),
        Strategy("random", "random", "a uniform draw (seeded)", uniform),
    ]


def matching_options(user: UserEnv, period: int, question: int) -> list[int]:
    """Every option whose combination equals the state at ``period`` (exactly one in well-formed data)."""
    qa = user.qas[question]
    gold = [user.periods[period].state.get(v) for v in qa.required_info]
    return [i for i, c in enumerate(qa.answer_choices) if list(c.state) == gold]


def reference_strategies(seed: int) -> list[Strategy]:
    """Perfect memory (must score 1.0) and no memory (must score the random baseline)."""

    def perfect(user: UserEnv, p: int, q: int) -> int:
        found = matching_options(user, p, q)
        # With no matching option the data is broken; -1 is never correct, so the invariant reports it.
        return found[0] if found else -1

    def none(user: UserEnv, p: int, q: int) -> int:
        return _rng(seed, "no_memory", user, q, p).randrange(len(user.qas[q].answer_choices))

    return [
        Strategy("perfect_memory", "reference", "knows the current state; must score 1.0", perfect),
        Strategy("no_memory", "reference", "knows nothing, draws uniformly; must be within CI of random", none),
    ]


def all_texts(user: UserEnv) -> list[str]:
    """Every text the embedding strategies look at, for one batched embedding call."""
    return ([qa.query for qa in user.qas] + [c.answer for qa in user.qas for c in qa.answer_choices]
            + [s.query for p in user.periods for s in p.sessions])
