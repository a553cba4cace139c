"""Run every strategy over every (user, period, question), score it, and decide whether the data is valid.

Decision rule (``DECISION_RULE`` is printed and written with the results):

- a gated strategy *leaks* when its accuracy beats the random baseline by more than ``margin`` **and**
  its 95 % lower bound is above the baseline. The first condition ignores effects too small to matter;
  the second ignores effects that small samples produce by chance. The lower bound used is the smaller
  of the reported interval's and a Wilson interval over all answers, so a t-interval that collapses
  because a few users happen to score alike cannot fail a file on its own.
- gated kinds: ``options``, ``context`` and ``random``; ``prior`` strategies (which know earlier periods'
  correct answers, i.e. a stale memory) are reported and gated only on request, because persistence of
  the state from one period to the next is what a memory benchmark is built on.
- ``perfect_memory`` must score exactly 1.0 with exactly one option matching the state per item, and
  ``no_memory`` (a uniform draw, reported with its interval) must have an exact expected score equal to
  the random baseline; the expectation is used instead of the draw because a sampled check would fail
  one seed in twenty by chance.

The reported interval is a 95 % t-interval over users (each user's mean accuracy) when there are at
least two users, else a Wilson interval over the answers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from ..data.model import Environment
from ..errors import DataError
from ..evaluate.metrics import mean_ci
from .audit import DataAudit, audit_environment
from .strategies import Strategy, TextVectors, all_texts, matching_options, reference_strategies, shortcut_strategies

DECISION_RULE = (
    "fail if a gated shortcut's accuracy - margin > random baseline AND its 95% lower bound (the smaller of the "
    "t-interval over users and the Wilson interval over answers) > random baseline; fail if perfect_memory < 1.0 "
    "(or an item has several matching options) or no_memory's exact expected score differs from the random baseline"
)
LEAK_SHARE = 0.9
GATED_KINDS = ("options", "context", "random")
Z95 = 1.959964


def wilson(hits: int, n: int) -> tuple[float | None, float | None]:
    """95 % Wilson score interval for ``hits`` successes out of ``n``."""
    if n == 0:
        return None, None
    p = hits / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class StrategyScore:
    """How one strategy did.

    Attributes:
        accuracy: mean over users of each user's accuracy (the same weighting as the random baseline).
        lo, hi: the reported 95 % interval (see ``interval``).
        gate_lo: the lower bound the decision uses.
        excess: ``accuracy - random``.
        verdict: ``pass``, ``fail`` or ``info`` (not gated).
    """

    name: str
    kind: str
    description: str
    accuracy: float
    lo: float | None
    hi: float | None
    interval: str
    gate_lo: float | None
    answers: int
    excess: float
    verdict: str
    per_user: dict[str, float]
    per_period: dict[int, float]


@dataclass(frozen=True)
class LeakyQuestion:
    """A question whose answer an options-only strategy finds at most periods although it moves."""

    user: str
    question: int
    query: str
    strategy: str
    hits: int
    periods: int


@dataclass
class ValidityReport:
    """Everything ``amemgym validate`` prints and writes."""

    margin: float
    seed: int
    embedder: str
    random_baseline: float
    users: int
    answers: int
    strategies: list[StrategyScore]
    leaky_questions: list[LeakyQuestion]
    broken_items: list[dict[str, Any]]
    failures: list[str]
    audit: DataAudit
    gated_kinds: tuple[str, ...] = GATED_KINDS
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No leak and no broken invariant."""
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "passed": self.passed, "failures": self.failures, "decision_rule": DECISION_RULE,
            "gated_kinds": list(self.gated_kinds), "margin": self.margin, "seed": self.seed,
            "embedder": self.embedder, "random_baseline": self.random_baseline, "users": self.users,
            "answers": self.answers, "strategies": [asdict(s) for s in self.strategies],
            "leaky_questions": [asdict(q) for q in self.leaky_questions], "leak_share": LEAK_SHARE,
            "broken_items": self.broken_items, "audit": self.audit.to_dict(), "notes": self.notes,
        }


def _score(strategy: Strategy, env: Environment) -> tuple[dict[str, list[int]], dict[int, list[int]],
                                                          dict[tuple[str, int], list[int]]]:
    by_user: dict[str, list[int]] = defaultdict(list)
    by_period: dict[int, list[int]] = defaultdict(list)
    by_question: dict[tuple[str, int], list[int]] = defaultdict(list)
    for user in env.users:
        for p in range(len(user.periods)):
            for q in range(len(user.qas)):
                hit = int(strategy.pick(user, p, q) in matching_options(user, p, q))
                by_user[user.id].append(hit)
                by_period[p].append(hit)
                by_question[(user.id, q)].append(hit)
    return by_user, by_period, by_question


def _random_baseline(env: Environment) -> tuple[float, dict[str, float]]:
    per_user = {u.id: sum(1 / len(qa.answer_choices) for _ in u.periods for qa in u.qas)
                / max(1, len(u.periods) * len(u.qas)) for u in env.users}
    return sum(per_user.values()) / len(per_user), per_user


def run_suite(env: Environment, vectors: TextVectors, *, margin: float = 0.03, seed: int = 0,
              embedder: str = "hash", gate_prior: bool = False) -> ValidityReport:
    """Score every strategy on ``env`` and apply the decision rule.

    Args:
        env: the environment (any shape: procedural, LLM-generated, original release).
        vectors: embeddings for the embedding strategies.
        margin: how far above random a shortcut may score before it counts as a leak.
        seed: seeds tie-breaks and the random draws.
        embedder: the embedder's name, recorded in the report.
        gate_prior: also fail on ``prior`` strategies.
    """
    if not env.users:
        raise DataError("the environment has no users")
    vectors.prepare([t for u in env.users for t in all_texts(u)])
    baseline, _ = _random_baseline(env)
    broken = _broken_items(env)
    gated = GATED_KINDS + (("prior",) if gate_prior else ())
    multi = len(env.users) >= 2
    scores: list[StrategyScore] = []
    leaky: list[LeakyQuestion] = []
    failures: list[str] = []
    for strategy in shortcut_strategies(seed, vectors) + reference_strategies(seed):
        by_user, by_period, by_question = _score(strategy, env)
        per_user = {u: sum(h) / len(h) for u, h in by_user.items() if h}
        hits = sum(sum(h) for h in by_user.values())
        n = sum(len(h) for h in by_user.values())
        w_lo, w_hi = wilson(hits, n)
        if multi:
            ci = mean_ci(list(per_user.values()))
            acc, lo, hi, interval = float(ci["mean"] or 0.0), ci["lo"], ci["hi"], "t over users"
            # An accuracy lies in [0, 1]; a t-interval over few users can reach past either end.
            lo = None if lo is None else max(0.0, float(lo))
            hi = None if hi is None else min(1.0, float(hi))
        else:
            acc, lo, hi, interval = hits / n if n else 0.0, w_lo, w_hi, "wilson over answers"
        gate_lo = min(x for x in (lo, w_lo) if x is not None) if (lo is not None or w_lo is not None) else None
        verdict = "info"
        if strategy.kind in gated:
            leaks = acc - margin > baseline and gate_lo is not None and gate_lo > baseline
            verdict = "fail" if leaks else "pass"
            if leaks:
                failures.append(f"shortcut {strategy.name} scores {acc:.3f} (95% lower bound {gate_lo:.3f}) against "
                                f"random {baseline:.3f}: +{acc - baseline:.3f} > margin {margin}")
        elif strategy.name == "perfect_memory":
            # Several matching options would also score 1.0, so uniqueness is checked separately.
            verdict = "pass" if hits == n and not broken else "fail"
            if verdict == "fail":
                failures.append(f"perfect_memory scores {hits}/{n} and {len(broken)} item(s) have no or several "
                                "options matching the state (see broken_items)")
        elif strategy.name == "no_memory":
            # The draw itself is reported, but the invariant uses its exact expectation: a sampled check
            # would fail one seed in twenty by chance.
            expected = _uniform_expectation(env)
            verdict = "pass" if abs(expected - baseline) < 1e-9 else "fail"
            if verdict == "fail":
                failures.append(f"no_memory's expected score {expected:.4f} differs from random {baseline:.4f}: "
                                "some options share a value combination")
        scores.append(StrategyScore(
            strategy.name, strategy.kind, strategy.description, acc, lo, hi, interval, gate_lo, n,
            acc - baseline, verdict, per_user, {p: sum(h) / len(h) for p, h in sorted(by_period.items())}))
        if strategy.kind == "options":
            leaky += _leaky(env, strategy, by_question)
    return ValidityReport(
        margin=margin, seed=seed, embedder=embedder, random_baseline=baseline, users=len(env.users),
        answers=sum(len(u.periods) * len(u.qas) for u in env.users), strategies=scores,
        leaky_questions=leaky, broken_items=broken, failures=failures, audit=audit_environment(env),
        gated_kinds=gated,
    )


def _uniform_expectation(env: Environment) -> float:
    """The expected accuracy of a uniform draw, weighted like the random baseline (users first)."""
    per_user = []
    for user in env.users:
        items = [len(matching_options(user, p, q)) / len(qa.answer_choices)
                 for p in range(len(user.periods)) for q, qa in enumerate(user.qas)]
        per_user.append(sum(items) / max(1, len(items)))
    return sum(per_user) / len(per_user)


def _leaky(env: Environment, strategy: Strategy,
           by_question: dict[tuple[str, int], list[int]]) -> list[LeakyQuestion]:
    """Questions where ``strategy`` is right at >= LEAK_SHARE of periods while the correct option moves."""
    out: list[LeakyQuestion] = []
    for user in env.users:
        for q, qa in enumerate(user.qas):
            hits = by_question[(user.id, q)]
            moves = len({tuple(matching_options(user, p, q)) for p in range(len(user.periods))}) > 1
            if moves and hits and sum(hits) >= LEAK_SHARE * len(hits):
                out.append(LeakyQuestion(user.id, q, qa.query, strategy.name, sum(hits), len(hits)))
    return out


def _broken_items(env: Environment, limit: int = 50) -> list[dict[str, Any]]:
    """Items with no option, or several options, matching the state (the first ``limit``)."""
    out: list[dict[str, Any]] = []
    for user in env.users:
        for p in range(len(user.periods)):
            for q in range(len(user.qas)):
                found = matching_options(user, p, q)
                if len(found) != 1 and len(out) < limit:
                    out.append({"user": user.id, "period": p, "question": q, "matching_options": found})
    return out
