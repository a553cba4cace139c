"""The validity suite on hand-made environments: clean data passes, planted leaks and broken data fail."""

from __future__ import annotations

import random  # noqa: F401
from pathlib import Path

import pytest

from amemgym.families.statetrack.data import (
    QA,
    AnswerChoice,
    Environment,
    Period,
    Session,
    StateUpdate,
    UserEnv,
    UserProfile,
    load_environment,
)
from amemgym.families.statetrack.validity.audit import audit_environment
from amemgym.families.statetrack.validity.strategies import (
    TextVectors,
    jaccard,
    matching_options,
    shortcut_strategies,
    top_options,
    words,
)
from amemgym.families.statetrack.validity.suite import run_suite, wilson
from amemgym.testing.scripted_model import HashEmbedder

_FILLER = ("plan", "week", "easy", "steady", "budget", "calm", "simple", "routine", "light", "early", "late",
           "short", "long", "shared", "quiet", "busy", "fresh", "warm", "cool", "open")


def synthetic_env(users: int = 8, periods: int = 6, questions: int = 4, seed: int = 0,
                  changes: int = 1) -> Environment:
    """A well-formed environment with persistent states, one session per update, shuffled equal-length options."""
    out = []
    for u in range(users):
        rng = random.Random(f"synthetic/{seed}/{u}")
        schema = {f"var_{v}": [f"v{v}_a", f"v{v}_b", f"v{v}_c"] for v in range(5)}
        state = {k: rng.choice(vals) for k, vals in schema.items()}
        plist = []
        for p in range(periods):
            if p == 0:
                updates = {k: StateUpdate(old=None, new=x) for k, x in state.items()}
            else:
                updates = {}
                for k in rng.sample(sorted(schema), changes):
                    new = rng.choice([x for x in schema[k] if x != state[k]])
                    updates[k] = StateUpdate(old=state[k], new=new)
                    state[k] = new
            sessions = [Session(exposed_states={k: up.new}, query=f"something about {rng.choice(_FILLER)} today",
                                session_time=f"2021-{p + 1:02d}-20 19:00") for k, up in updates.items()]
            plist.append(Period(period_start=None if p == 0 else f"2021-{p:02d}-01", period_end=f"2021-{p + 1:02d}-28",
                                state=dict(state), updates=updates, sessions=sessions))
        qas = []
        for _ in range(questions):
            req = sorted(rng.sample(sorted(schema), 2))
            combos = list(dict.fromkeys(tuple(pp.state[v] for v in req) for pp in plist))
            kinds = ["experience"] * len(combos)
            while len(combos) < 4:
                c = tuple(rng.choice(schema[v]) for v in req)
                if c not in combos:
                    combos.append(c)
                    kinds.append("random")
            order = list(range(len(combos)))
            rng.shuffle(order)
            choices = [AnswerChoice(state=list(combos[i]), type=kinds[i],
                                    answer=" ".join(rng.choice(_FILLER) for _ in range(8))) for i in order]
            qas.append(QA(query=f"How should I handle {rng.choice(_FILLER)} things?", required_info=req,
                          answer_choices=choices))
        profile = UserProfile(name=f"User {u}", formatted_str=f"name: User {u}")
        out.append(UserEnv(id=f"u{u}", start_time="2021-01-01", user_profile=profile, state_schema=schema,
                           periods=plist, qas=qas))
    return Environment(users=out)


def plant_longest(env: Environment) -> Environment:
    """Pad the option that is correct at the most periods of every question (the planted leak)."""
    env = env.model_copy(deep=True)
    for user in env.users:
        for q, qa in enumerate(user.qas):
            counts = [0] * len(qa.answer_choices)
            for p in range(len(user.periods)):
                for i in matching_options(user, p, q):
                    counts[i] += 1
            best = counts.index(max(counts))
            qa.answer_choices[best].answer += " and keep a written checklist for every step along the way"
    return env


def suite(env: Environment, **kw):
    return run_suite(env, TextVectors(HashEmbedder().embed_sync), **kw)


def by_name(report) -> dict:
    return {s.name: s for s in report.strategies}


def test_clean_synthetic_environment_passes() -> None:
    report = suite(synthetic_env())
    assert report.passed, report.failures
    assert by_name(report)["perfect_memory"].accuracy == 1.0


def test_original_shape_fixture_passes(original_env_path: Path) -> None:
    report = suite(load_environment(original_env_path))
    assert report.passed, report.failures
    assert by_name(report)["first"].interval.startswith("t over (user, question)")


def test_planted_longest_leak_fails_naming_longest() -> None:
    report = suite(plant_longest(synthetic_env()))
    assert not report.passed
    assert by_name(report)["longest"].verdict == "fail"
    assert any("longest" in f for f in report.failures)


def test_missing_correct_option_breaks_perfect_memory() -> None:
    env = synthetic_env(users=2)
    qa = env.users[0].qas[0]
    gold = env.users[0].correct_choice(0, 0)
    qa.answer_choices[gold].state = ["nope", "nope"]
    report = suite(env)
    assert by_name(report)["perfect_memory"].verdict == "fail"
    assert report.broken_items and report.broken_items[0]["matching_options"] == []


def test_duplicate_combinations_break_both_reference_agents() -> None:
    env = synthetic_env(users=2)
    qa = env.users[0].qas[0]
    gold = env.users[0].correct_choice(0, 0)
    other = (gold + 1) % len(qa.answer_choices)
    qa.answer_choices[other].state = list(qa.answer_choices[gold].state)
    report = suite(env)
    names = by_name(report)
    assert names["perfect_memory"].verdict == "fail"
    assert names["no_memory"].verdict == "fail"


def test_no_effect_below_margin_passes_even_if_significant() -> None:
    env = plant_longest(synthetic_env())
    longest = by_name(suite(env))["longest"]
    # The margin has to clear the pooled excess and the excess at every single period.
    worst = max([longest.excess] + [acc - longest.baseline for acc in longest.per_period.values()])
    assert by_name(suite(env, margin=worst + 0.01))["longest"].verdict in ("pass", "borderline")


def test_prior_strategies_are_reported_not_gated_unless_asked() -> None:
    env = synthetic_env(periods=8)
    report = suite(env)
    assert by_name(report)["prior_question"].verdict == "info"
    gated = suite(env, gate_prior=True)
    # Persistent states make stale answers right most of the time: the gate catches that when asked.
    assert by_name(gated)["prior_question"].verdict == "fail"


def test_leaky_question_lists_options_only_hits() -> None:
    env = synthetic_env(users=3, periods=10, changes=1)
    # Question 0 of user 0: one combination at periods 0-8, another at period 9 (the option moves once).
    user = env.users[0]
    qa = user.qas[0]
    first, last = qa.answer_choices[0].state, qa.answer_choices[1].state
    for p, period in enumerate(user.periods):
        period.state.update(zip(qa.required_info, last if p == 9 else first, strict=True))
    leaky = suite(plant_longest(env)).leaky_questions
    assert any((q.user, q.question, q.strategy, q.hits) == ("u0", 0, "longest", 9) for q in leaky)
    assert all(q.hits >= 0.9 * q.periods for q in leaky)


def test_a_tie_is_a_uniform_draw_among_the_tied_options_not_the_first() -> None:
    env = synthetic_env(users=4)
    for user in env.users:
        for qa in user.qas:
            for c in qa.answer_choices:
                c.answer = "same length text"
    longest = next(s for s in shortcut_strategies(TextVectors(HashEmbedder().embed_sync)) if s.name == "longest")
    assert all(longest.pick(u, 0, q) == tuple(range(len(qa.answer_choices)))
               for u in env.users for q, qa in enumerate(u.qas))
    # Scored by its expectation, the all-tied strategy is exactly the random baseline.
    assert by_name(suite(env))["longest"].excess == pytest.approx(0.0, abs=1e-12)


def _verdict(report) -> dict:
    data = report.to_dict()
    return {k: v for k, v in data.items() if k not in ("seed", "timings_s")}


def test_the_same_file_under_5_seeds_gives_one_report() -> None:
    # Planted so that several strategies sit near the margin: any seeded draw would move them.
    env = plant_longest(synthetic_env(users=5))
    reports = [_verdict(suite(env, seed=s)) for s in range(5)]
    assert all(r == reports[0] for r in reports[1:])


def test_audit_finds_unexposed_static_and_wrong_exposure() -> None:
    env = synthetic_env(users=1, periods=3, changes=1)
    user = env.users[0]
    user.periods[1].sessions[0].exposed_states = {}
    user.periods[2].sessions[0].exposed_states = {"var_0": "not_the_state"}
    counts = audit_environment(env).to_dict()["counts"]
    assert counts["unexposed_update"] >= 1
    assert counts["wrong_exposure"] == 1
    assert counts["static_variable"] >= 2  # five variables, two changes


def test_wilson_interval_contains_the_proportion() -> None:
    lo, hi = wilson(3, 12)
    assert lo < 0.25 < hi and 0.0 <= lo and hi <= 1.0
    assert wilson(0, 0) == (None, None)


def test_jaccard_of_word_sets() -> None:
    assert jaccard(words("Cook, cook rice!"), words("rice and beans")) == 1 / 4
    assert top_options([1.0, 3.0, 2.0]) == (1,) and top_options([3.0, 1.0, 3.0]) == (0, 2)


def test_gate_bound_counts_repeated_answers_of_a_question_once() -> None:
    import numpy as np

    from amemgym.families.statetrack.validity.gate import effective_size, gate_stat

    # Two questions answered 20 times each, one always right and one always wrong: two pieces of
    # evidence, not forty.
    a = np.asarray([1.0] * 20 + [0.0] * 20)
    clustered = np.asarray([0] * 20 + [1] * 20)
    assert effective_size(a, clustered) == (2.0, 2)
    # With no clustering at all (every answer its own cluster) the effective size is the number of answers.
    assert effective_size(a, np.arange(40))[0] == 40.0
    user = np.zeros(40, dtype=int)
    b = np.full(40, 0.25)
    loose = gate_stat(a, b, user, clustered, 0.05)
    tight = gate_stat(a, b, user, np.arange(40), 0.05)
    assert loose.gate_lo is not None and tight.gate_lo is not None
    assert loose.gate_lo < 0.25 < tight.gate_lo


def test_a_file_within_noise_of_the_margin_is_borderline_with_its_interval_at_every_seed() -> None:
    env = plant_longest(synthetic_env())
    margin = round(by_name(suite(env))["longest"].excess, 3)
    for seed in range(5):
        report = suite(env, margin=margin, seed=seed)
        longest = by_name(report)["longest"]
        assert longest.verdict == "borderline" and longest.lo is not None
        assert longest.lo - longest.baseline < margin < longest.hi - longest.baseline
        assert report.passed, report.failures
        assert any(line.startswith("longest scores") and f"[{longest.lo:.3f}, {longest.hi:.3f}]" in line
                   for line in report.borderline)
