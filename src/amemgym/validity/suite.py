"""Run every strategy over every (user, period, question), score it, and decide whether the data is valid.

Decision rule (``DECISION_RULE`` is printed and written with the results):

- a gated strategy *leaks* when its accuracy beats the random baseline by more than ``margin`` **and**
  its 95 % lower bound is above the baseline. The first condition ignores effects too small to matter;
  the second ignores effects that small samples produce by chance. Answers to one question repeat over
  the periods, so they are not independent: the lower bound used is the smaller of the reported
  interval's and a Wilson interval over all answers whose sample size is the effective one of answers
  clustered by (user, question) (cluster-robust variance). A t-interval that collapses because a few
  users happen to score alike therefore cannot fail a file on its own, and repeated answers cannot make
  the Wilson interval look more certain than it is.
- the gated strategies include cross-user ones (see ``crossuser``): favoured middle slots, option
  centrality, and models fitted on half of the users and scored on the other half (option frequency,
  marker words, a softmax text model).
- gated kinds: ``options``, ``context`` and ``random``; ``prior`` strategies (which know earlier periods'
  correct answers, i.e. a stale memory) are reported and gated only on request, because persistence of
  the state from one period to the next is what a memory benchmark is built on.
- ``perfect_memory`` must score exactly 1.0 with exactly one option matching the state per item, and
  ``no_memory`` (a uniform draw, reported with its interval) must have an exact expected score equal to
  the random baseline; the expectation is used instead of the draw because a sampled check would fail
  one seed in twenty by chance.
- a question offering the same option text twice fails (the two options differ only in their hidden state).
- every change must be stated by the opening text of its period, as read by a reader that sees only the
  text (see ``exposure``); a change the metadata ``exposed_states`` does not expose fails as well.

The reported interval is a 95 % t-interval over users (each user's mean accuracy) when there are at
least two users, else a t-interval over (user, question) clusters.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from ..data.model import Environment
from ..errors import DataError
from ..scoring.metrics import mean_ci
from .audit import DataAudit, audit_environment
from .crossuser import cross_user_strategies, duplicate_options
from .exposure import TextExposure, pack_reader, read_exposure
from .strategies import Strategy, TextVectors, all_texts, matching_options, reference_strategies, shortcut_strategies

DECISION_RULE = (
    "fail if a gated shortcut's accuracy - margin > random baseline AND its 95% lower bound (the smaller of the "
    "reported t-interval and a Wilson interval with the effective size of answers clustered by (user, question)) "
    "> random baseline; fail if perfect_memory < 1.0 (or an item has several matching options), if "
    "no_memory's exact expected score differs from the random baseline, if a question repeats an option text, or "
    "if a change is not stated by its period's opening text (text reader) or not exposed in the metadata"
)
LEAK_SHARE = 0.9
GATED_KINDS = ("options", "context", "random")
Z95 = 1.959964


def wilson(hits: int, n: int) -> tuple[float | None, float | None]:
    """95 % Wilson score interval for ``hits`` successes out of ``n``."""
    if n == 0:
        return None, None
    return wilson_n(hits / n, float(n))


def wilson_n(p: float, n: float) -> tuple[float, float]:
    """95 % Wilson score interval for a proportion ``p`` with a (possibly effective, non-integer) size ``n``."""
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
    duplicate_options: list[dict[str, Any]] = field(default_factory=list)
    text_exposure: TextExposure | None = None

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
            "duplicate_options": self.duplicate_options,
            "text_exposure": None if self.text_exposure is None else self.text_exposure.to_dict(),
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


def clustered_wilson(by_question: dict[tuple[str, int], list[int]]) -> float | None:
    """Lower 95 % Wilson bound of the pooled accuracy with an effective sample size for clustered answers.

    Answers to one (user, question) repeat over the periods, so they are not independent. The variance of
    the pooled proportion is estimated cluster-robustly (clusters = (user, question)), and the Wilson
    interval uses the sample size that variance corresponds to, kept between the number of clusters
    (every cluster one answer) and the number of answers (no clustering at all).
    """
    groups = [h for h in by_question.values() if h]
    n = sum(len(h) for h in groups)
    c = len(groups)
    if not n:
        return None
    p = sum(sum(h) for h in groups) / n
    if c < 2 or p in (0.0, 1.0):
        n_eff = float(c)
    else:
        var = c / (c - 1) * sum((sum(h) - p * len(h)) ** 2 for h in groups) / n**2
        n_eff = min(float(n), max(float(c), p * (1 - p) / var)) if var > 0 else float(n)
    lo, _ = wilson_n(p, n_eff)
    return lo


def run_suite(env: Environment, vectors: TextVectors, *, margin: float = 0.03, seed: int = 0,
              embedder: str = "hash", gate_prior: bool = False,
              text_exposure: TextExposure | None = None) -> ValidityReport:
    """Score every strategy on ``env`` and apply the decision rule.

    Args:
        env: the environment (any shape: procedural, LLM-generated, original release).
        vectors: embeddings for the embedding strategies.
        margin: how far above random a shortcut may score before it counts as a leak.
        seed: seeds tie-breaks and the random draws.
        embedder: the embedder's name, recorded in the report.
        gate_prior: also fail on ``prior`` strategies.
        text_exposure: what a text-only reader found (e.g. an LLM judge's); default the lexical reader for
            procedural environments, none otherwise (a note says exposure was then read from metadata only).
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
    notes: list[str] = []
    strategies = shortcut_strategies(seed, vectors) + cross_user_strategies(env, seed, vectors)
    for strategy in strategies + reference_strategies(seed):
        by_user, by_period, by_question = _score(strategy, env)
        per_user = {u: sum(h) / len(h) for u, h in by_user.items() if h}
        hits = sum(sum(h) for h in by_user.values())
        n = sum(len(h) for h in by_user.values())
        cw_lo = clustered_wilson(by_question)
        if multi:
            ci = mean_ci(list(per_user.values()))
            acc, lo, hi, interval = float(ci["mean"] or 0.0), ci["lo"], ci["hi"], "t over users"
        else:
            ci = mean_ci([sum(h) / len(h) for h in by_question.values() if h])
            acc, lo, hi, interval = hits / n if n else 0.0, ci["lo"], ci["hi"], "t over (user, question)"
        # An accuracy lies in [0, 1]; a t-interval over few users can reach past either end.
        lo = None if lo is None else max(0.0, float(lo))
        hi = None if hi is None else min(1.0, float(hi))
        bounds = [x for x in (lo, cw_lo) if x is not None]
        gate_lo = min(bounds) if bounds else None
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
    n_dup, dups = duplicate_options(env)
    if n_dup:
        failures.append(f"{n_dup} option(s) repeat another option's text within the same question "
                        "(see duplicate_options)")
    audit = audit_environment(env)
    if audit.count("unexposed_update"):
        failures.append(f"{audit.count('unexposed_update')} change(s) are not exposed by any session of their "
                        "period according to the metadata (exposed_states)")
    why = ""
    if text_exposure is None:
        reader, why = pack_reader(env)
        if reader is not None:
            text_exposure = read_exposure(env, reader, why)
    if text_exposure is None:
        notes.append(f"exposure was read from the metadata only (no text reader: {why}; pass --judge to have an "
                     "LLM read the openings)")
    else:
        for check, what in (("unrevealed_change", "are not stated by any opening text of their period"),
                            ("text_contradicts_state", "are stated by an opening text with a value other than "
                                                       "the state's"),
                            ("unread_period", "could not be checked because the reader failed on their period")):
            k = text_exposure.count(check)
            if k:
                failures.append(f"{k}/{text_exposure.changes} change(s) {what} (text reader: "
                                f"{text_exposure.reader}; see text_exposure)")
    return ValidityReport(
        margin=margin, seed=seed, embedder=embedder, random_baseline=baseline, users=len(env.users),
        answers=sum(len(u.periods) * len(u.qas) for u in env.users), strategies=scores,
        leaky_questions=leaky, broken_items=broken, failures=failures, audit=audit,
        gated_kinds=gated, notes=notes, duplicate_options=dups, text_exposure=text_exposure,
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
