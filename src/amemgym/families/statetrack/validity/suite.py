"""Run every family of memoryless strategy over every (user, period, question), score it, and decide
whether the data is valid (docs/design.md §8).

Decision rule (``DECISION_RULE`` is printed and written with the results):

- every strategy is scored by its exact expected accuracy per item (ties are a uniform draw), so the
  verdict does not depend on ``--seed``; the cross-fitted learners use a split fixed by the user ids.
- a gated strategy *fails* when the 95 % lower bound of its excess over its baseline (random; the honest
  recency reader for window strategies) is above ``margin`` (see ``gate``): it surely beats the baseline
  by more than the margin. It is tested pooled over all periods and at each period on its own (a tell can sit in one
  period, e.g. the last, where the memory curve is read). The per-period layer multiplies the number of
  tests by the number of periods, so its bounds are Bonferroni-corrected for strategies x periods; the
  pooled layer keeps one 95 % test per strategy, guarded by the margin as before.
- a strategy whose lower bound is above its baseline but whose interval holds the margin is *borderline*:
  within noise of the margin, reported loudly with its interval and not failed. (Failing on the point
  estimate instead made a file whose best shortcut sat 0.0004 above the margin fail, and one 0.0002
  below pass: a verdict decided by noise.)
- gated kinds: ``options``, ``context`` and ``window``; ``prior`` strategies (which know earlier periods'
  correct answers, i.e. a stale memory) are reported and gated only on request.
- ``perfect_memory`` must score exactly 1.0 with exactly one option matching the state per item, and
  ``no_memory``'s exact expected score must equal the random baseline.
- a question offering the same option text twice fails (the two options differ only in their hidden state).
- every change must be stated by the opening text of its period, as read by a reader that sees only the
  text (the pack's phrasings or the judge role, see ``reading``); a change the metadata ``exposed_states``
  does not expose fails as well. A file whose text no reader could check passes only with a loud
  ``exposure unchecked`` line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ....errors import DataError
from ..data.model import Environment
from .audit import DataAudit, audit_environment
from .crossuser import cross_user_strategies, duplicate_options, option_strategies
from .exposure import TextExposure
from .gate import ALPHA, GateStat, decide, gate_stat
from .reading import JUDGE_NOTE, TextJudge, read_text
from .strategies import Strategy, TextVectors, all_texts, matching_options, reference_strategies, shortcut_strategies
from .window import recency_reader, window_strategies
from .withinuser import within_user_strategies

DECISION_RULE = (
    "each strategy is scored by its exact expected accuracy (verdict independent of --seed); fail if a gated "
    "strategy's 95% lower bound (the smaller of a t-interval over users and a Wilson bound with the effective "
    "size of answers clustered by (user, question)) is above its baseline (random; the honest recency reader for "
    "window strategies) + margin, pooled or at any one period (per-period bounds Bonferroni-corrected for "
    "strategies x periods); borderline (reported, exit 0) if the bound is above the baseline and the interval "
    "holds the margin; fail if perfect_memory "
    "< 1.0 (or an item has several matching options), if no_memory's exact expected score differs from random, "
    "if a question repeats an option text, or if a change is not stated by its period's opening text (text "
    "reader) or not exposed in the metadata"
)
LEAK_SHARE = 0.9
GATED_KINDS = ("options", "context", "window")

#: The classes of memoryless strategy, in the order they run (docs/design.md §8).
FAMILIES: dict[str, str] = {
    "fixed": "fixed rules on the options: slots, length, similarity to the question, centrality",
    "cross-user": "models fitted on the other half of the users",
    "within-user": "models fitted on the user's own other questions",
    "context": "surface similarity to every opening so far",
    "window": "surface similarity to the latest periods' openings, against an honest recency reader",
    "prior": "earlier periods' correct answers (a stale memory; gated on request)",
    "random": "a uniform draw",
    "reference": "perfect and no memory (invariants)",
}

#: Called with (step, seconds or None when it starts) so the command can show progress.
Progress = Callable[[str, float | None], None]


def wilson(hits: int, n: int) -> tuple[float | None, float | None]:
    """95 % Wilson score interval for ``hits`` successes out of ``n``."""
    if n == 0:
        return None, None
    p, z = hits / n, 1.959964
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class PeriodFlag:
    """A period at which a strategy fails or is borderline on its own."""

    period: int
    verdict: str
    accuracy: float
    baseline: float
    lo: float | None
    hi: float | None
    gate_lo: float | None


@dataclass(frozen=True)
class StrategyScore:
    """How one strategy did.

    Attributes:
        accuracy: mean over users of each user's expected accuracy (the same weighting as the baseline).
        baseline: the baseline's accuracy on the same items (random, or the honest recency reader).
        lo, hi: the reported (corrected) interval of the accuracy.
        gate_lo: the lower bound the decision uses.
        excess: ``accuracy - baseline``.
        verdict: ``pass``, ``borderline``, ``fail`` or ``info`` (not gated); the worst of the pooled test and
            the per-period tests.
        per_period: accuracy at each period.
        period_flags: the periods that fail or are borderline on their own.
    """

    name: str
    kind: str
    family: str
    description: str
    accuracy: float
    baseline: float
    lo: float | None
    hi: float | None
    interval: str
    gate_lo: float | None
    answers: int
    excess: float
    verdict: str
    per_user: dict[str, float]
    per_period: dict[int, float]
    period_flags: list[PeriodFlag] = field(default_factory=list)


@dataclass(frozen=True)
class LeakyQuestion:
    """A question whose answer an options-only strategy finds at most periods although it moves."""

    user: str
    question: int
    query: str
    strategy: str
    hits: float
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
    exposure_unchecked: str | None = None
    borderline: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    tests: dict[str, int] = field(default_factory=dict)
    judge: str = "never"

    @property
    def passed(self) -> bool:
        """No leak and no broken invariant."""
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "passed": self.passed, "failures": self.failures, "borderline": self.borderline,
            "exposure_checked": self.exposure_unchecked is None, "exposure_unchecked": self.exposure_unchecked,
            "judge": self.judge,
            "decision_rule": DECISION_RULE, "alpha": ALPHA, "tests": self.tests,
            "gated_kinds": list(self.gated_kinds), "margin": self.margin, "seed": self.seed,
            "embedder": self.embedder, "random_baseline": self.random_baseline, "users": self.users,
            "answers": self.answers, "families": FAMILIES, "timings_s": self.timings,
            "strategies": [asdict(s) for s in self.strategies],
            "leaky_questions": [asdict(q) for q in self.leaky_questions], "leak_share": LEAK_SHARE,
            "broken_items": self.broken_items, "audit": self.audit.to_dict(), "notes": self.notes,
            "duplicate_options": self.duplicate_options,
            "text_exposure": None if self.text_exposure is None else self.text_exposure.to_dict(),
        }


class _Items:
    """Every (user, period, question) in a fixed order, with the index arrays the gate groups by."""

    def __init__(self, env: Environment) -> None:
        rows = [(ui, p, q) for ui, u in enumerate(env.users) for p in range(len(u.periods)) for q in range(len(u.qas))]
        self.env = env
        self.rows = rows
        self.user = np.asarray([r[0] for r in rows], dtype=np.int64)
        self.period = np.asarray([r[1] for r in rows], dtype=np.int64)
        qmax = max(len(u.qas) for u in env.users) or 1
        self.cluster = self.user * qmax + np.asarray([r[2] for r in rows], dtype=np.int64)
        self.correct = [set(matching_options(env.users[ui], p, q)) for ui, p, q in rows]
        self.random = np.asarray([1 / len(env.users[ui].qas[q].answer_choices) for ui, _, q in rows])

    def score(self, strategy: Strategy) -> np.ndarray:
        out = np.empty(len(self.rows))
        for k, (ui, p, q) in enumerate(self.rows):
            chosen = strategy.pick(self.env.users[ui], p, q)
            out[k] = len(self.correct[k].intersection(chosen)) / len(chosen)
        return out


def run_suite(env: Environment, vectors: TextVectors, *, margin: float = 0.03, seed: int = 0,
              embedder: str = "hash", gate_prior: bool = False, text_exposure: TextExposure | None = None,
              judge: TextJudge | None = None, judge_all: bool = False,
              progress: Progress | None = None) -> ValidityReport:
    """Score every family of strategy on ``env`` and apply the decision rule.

    Args:
        env: the environment (any shape: procedural, LLM-generated, original release).
        vectors: embeddings for the embedding strategies.
        margin: how far above its baseline a strategy may score before it counts as a leak.
        seed: recorded only; the verdict does not depend on it (exact expectations, a fixed split).
        embedder: the embedder's name, recorded in the report.
        gate_prior: also fail on ``prior`` strategies.
        text_exposure: what a text-only reader already found; default read here (``reading.read_text``): the
            pack's phrasings for the users it recognises, ``judge`` for the others.
        judge: the judge role as a text reader (None: users the pack cannot read are reported unchecked).
        judge_all: the judge reads every user, not only those the pack cannot read.
        progress: told when each step starts and how long it took.
    """
    if not env.users:
        raise DataError("the environment has no users")
    timings: dict[str, float] = {}

    def step(name: str, fn: Callable[[], Any]) -> Any:
        if progress:
            progress(name, None)
        t0 = time.perf_counter()
        value = fn()
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
        if progress:
            progress(name, timings[name])
        return value

    # The text first: a judge that cannot be reached stops here, before the embeddings' work.
    exposure: TextExposure | None
    unchecked: str | None
    if text_exposure is not None:
        exposure, unchecked = text_exposure, None
    else:
        exposure, unchecked = read_text(env, judge, judge_all, progress=step)
    step("embeddings", lambda: vectors.prepare([t for u in env.users for t in all_texts(u)]))
    items = _Items(env)
    gated = GATED_KINDS + (("prior",) if gate_prior else ())
    honest = {size: recency_reader(exposure.stated if exposure is not None else None, size) for size in (1, 2)}

    def build(family: str) -> list[Strategy]:
        if family == "fixed":
            return [s for s in shortcut_strategies(vectors) if s.family == "fixed"] + option_strategies(env, vectors)
        if family == "cross-user":
            return cross_user_strategies(env)
        if family == "within-user":
            return within_user_strategies(env)
        if family == "window":
            return window_strategies(vectors, exposure.stated if exposure is not None else None)
        if family == "reference":
            return reference_strategies()
        return [s for s in shortcut_strategies(vectors) if s.family == family]

    scored: list[tuple[Strategy, np.ndarray, np.ndarray]] = []
    for family in FAMILIES:
        def run(family: str = family) -> list[tuple[Strategy, np.ndarray, np.ndarray]]:
            out = []
            for s in build(family):
                base = items.random
                if s.kind == "window":
                    size = int(s.name.removeprefix("window").split("_")[0])
                    base = np.asarray([honest[size](env.users[ui], p, q) for ui, p, q in items.rows])
                out.append((s, items.score(s), base))
            return out

        scored += step(family, run)

    def gates() -> tuple[list[StrategyScore], list[str], list[str], dict[str, int]]:
        return _gates(env, items, scored, gated, margin)

    scores, failures, borderline, tests = step("gates", gates)
    baseline = float(np.mean([items.random[items.user == ui].mean() for ui in range(len(env.users))]))
    broken = _broken_items(env)
    for k, (s, a, _) in enumerate(scored):
        bad = False
        if s.name == "perfect_memory" and (a.min() < 1.0 or broken):
            bad = True
            failures.append(f"perfect_memory scores {a.sum():.0f}/{len(a)} and {len(broken)} item(s) have no or "
                            "several options matching the state (see broken_items)")
        elif s.name == "no_memory":
            # Several options sharing the state's combination would lift a uniform draw above 1/n.
            expected = float(np.mean([a[items.user == ui].mean() for ui in range(len(env.users))]))
            if abs(expected - baseline) >= 1e-9:
                bad = True
                failures.append(f"no_memory's expected score {expected:.4f} differs from random {baseline:.4f}: "
                                "some options share a value combination")
        elif s.kind != "reference":
            continue
        scores[k] = replace(scores[k], verdict="fail" if bad else "pass")
    leaky = [q for s, a, _ in scored if s.kind == "options" for q in _leaky(env, items, s, a)]
    n_dup, dups = duplicate_options(env)
    if n_dup:
        failures.append(f"{n_dup} option(s) repeat another option's text within the same question "
                        "(see duplicate_options)")
    audit = audit_environment(env)
    if audit.count("unexposed_update"):
        failures.append(f"{audit.count('unexposed_update')} change(s) are not exposed by any session of their "
                        "period according to the metadata (exposed_states)")
    notes: list[str] = []
    if exposure is not None:
        found = [(c, w) for c, w in (
            ("unrevealed_change", "are not stated by any opening text of their period"),
            ("text_contradicts_state", "are stated by an opening text with a value other than the state's"),
            ("unread_period", "could not be checked because the reader failed on their period"))
            if exposure.count(c)]
        if found and exposure.caveat:
            # The built-in phrasings may miss an edited pack's: that is no proof either way.
            unchecked = (f"exposure UNCHECKED: the text reader found {len(exposure.findings)} problem(s), but "
                         f"{exposure.caveat}, whose phrasings it may not know; the judge role rereads them unless "
                         "--no-judge is given")
        for check, what in found if not exposure.caveat else []:
            failures.append(f"{exposure.count(check)}/{exposure.changes} change(s) {what} (text reader: "
                            f"{exposure.reader}; see text_exposure)")
        if exposure.judged_users:
            notes.append(judge.note if judge is not None else JUDGE_NOTE)
    return ValidityReport(
        margin=margin, seed=seed, embedder=embedder, random_baseline=baseline, users=len(env.users),
        answers=len(items.rows), strategies=scores, leaky_questions=leaky, broken_items=broken,
        failures=failures, audit=audit, gated_kinds=gated, notes=notes, duplicate_options=dups,
        text_exposure=exposure, exposure_unchecked=unchecked, borderline=borderline, timings=timings, tests=tests,
        judge="given" if text_exposure is not None else "never" if judge is None else
        "always" if judge_all else "auto",
    )


def _gates(env: Environment, items: _Items, scored: list[tuple[Strategy, np.ndarray, np.ndarray]],
           gated: tuple[str, ...], margin: float) -> tuple[list[StrategyScore], list[str], list[str], dict[str, int]]:
    """Pooled and per-period tests of every gated strategy (the per-period layer Bonferroni-corrected)."""
    periods = sorted(set(items.period.tolist()))
    under_test = [(s, a, b) for s, a, b in scored if s.kind in gated]
    n_period = max(1, len(under_test) * len(periods))
    masks = {p: items.period == p for p in periods}
    failures: list[str] = []
    borderline: list[str] = []
    out: list[StrategyScore] = []
    for s, a, b in scored:
        is_gated = s.kind in gated
        pooled = gate_stat(a, b, items.user, items.cluster, ALPHA)
        verdict = decide(pooled, margin) if is_gated else "info"
        against = "the honest recency reader" if s.kind == "window" else "random"
        flags: list[PeriodFlag] = []
        per_period: dict[int, float] = {}
        for p, m in masks.items():
            per_period[p] = float(a[m].mean())
            if not is_gated:
                continue
            st = gate_stat(a[m], b[m], items.user[m], items.cluster[m], ALPHA / n_period)
            v = decide(st, margin)
            if v != "pass":
                flags.append(PeriodFlag(p, v, st.accuracy, st.baseline, st.lo, st.hi, st.gate_lo))
        if verdict == "fail":
            lower = pooled.gate_lo or 0.0  # a fail always has a bound
            failures.append(f"shortcut {s.name} scores {pooled.accuracy:.3f} (95% lower bound "
                            f"{lower:.3f}) against {against} {pooled.baseline:.3f}: "
                            f"+{lower - pooled.baseline:.3f} > margin {margin} at the lower bound")
        elif verdict == "borderline":
            borderline.append(_borderline_line(s.name, "", pooled, against, margin))
        for f in flags:
            if f.verdict == "fail":
                failures.append(f"shortcut {s.name} at period {f.period} scores {f.accuracy:.3f} (lower bound "
                                f"{f.gate_lo:.3f}, Bonferroni-corrected) against {against} {f.baseline:.3f}: "
                                f"+{(f.gate_lo or 0.0) - f.baseline:.3f} > margin {margin} at the lower bound")
            else:
                st = GateStat(f.accuracy, f.baseline, f.accuracy - f.baseline, f.lo, f.hi, f.gate_lo, 0)
                borderline.append(_borderline_line(s.name, f" at period {f.period}", st, against, margin))
        ranks = {"info": 0, "pass": 1, "borderline": 2, "fail": 3}
        worst = max([verdict] + [f.verdict for f in flags], key=ranks.__getitem__)
        per_user = {env.users[ui].id: float(a[items.user == ui].mean()) for ui in range(len(env.users))}
        interval = "t over users" if len(env.users) >= 2 else "t over (user, question)"
        out.append(StrategyScore(
            s.name, s.kind, s.family, s.description, pooled.accuracy, pooled.baseline, pooled.lo, pooled.hi,
            interval, pooled.gate_lo, pooled.answers,
            pooled.excess, worst, per_user, per_period, flags))
    return out, failures, borderline, {"pooled": len(under_test), "per_period": len(under_test) * len(periods)}


def _borderline_line(name: str, where: str, st: GateStat, against: str, margin: float) -> str:
    ci = "n/a" if st.lo is None or st.hi is None else f"[{st.lo:.3f}, {st.hi:.3f}]"
    return (f"{name}{where} scores {st.accuracy:.3f} {ci} against {against} {st.baseline:.3f} "
            f"(+{st.excess:.3f}): it surely beats the baseline, but whether by more than the margin {margin} is "
            "within noise")


def _leaky(env: Environment, items: _Items, strategy: Strategy, a: np.ndarray) -> list[LeakyQuestion]:
    """Questions where ``strategy`` is right at >= LEAK_SHARE of periods while the correct option moves."""
    out: list[LeakyQuestion] = []
    by_cluster: dict[int, list[int]] = {}
    for k, c in enumerate(items.cluster.tolist()):
        by_cluster.setdefault(c, []).append(k)
    for ks in by_cluster.values():
        ui, _, q = items.rows[ks[0]]
        user = env.users[ui]
        hits = float(a[ks].sum())
        moves = len({tuple(sorted(items.correct[k])) for k in ks}) > 1
        if moves and hits >= LEAK_SHARE * len(ks) - 1e-9:
            out.append(LeakyQuestion(user.id, q, user.qas[q].query, strategy.name, hits, len(ks)))
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
