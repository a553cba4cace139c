"""The episode schedule shared by the runner and the Gym environment: order, rounds, seeds and resume."""

from __future__ import annotations

from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.schedule import PeriodEnd, SessionStep, episode_schedule, rounds_for, user_seed
from amemgym.seeding import derive_seed


def _user():  # type: ignore[no-untyped-def]
    return load_environment(tiny_environment_path()).users[0]


def test_every_session_then_its_period_end_in_order() -> None:
    user, cfg = _user(), load_config("tiny")
    seed = user_seed(cfg, user)
    steps = list(episode_schedule(user, cfg, seed))
    expected: list[SessionStep | PeriodEnd] = []
    for p, period in enumerate(user.periods):
        for s, session in enumerate(period.sessions):
            expected.append(SessionStep(period=p, session=s, sessions=len(period.sessions),
                                        rounds=rounds_for(user, cfg, p), seed=derive_seed(seed, p, s), spec=session))
        expected.append(PeriodEnd(period=p))
    assert steps == expected
    # Distinct sessions get distinct seeds, so no two sessions replay the same simulator draws.
    seeds = [st.seed for st in steps if isinstance(st, SessionStep)]
    assert len(set(seeds)) == len(seeds)


def test_a_resume_skips_played_sessions_but_keeps_the_period_end() -> None:
    user, cfg = _user(), load_config("tiny")
    seed = user_seed(cfg, user)
    full = list(episode_schedule(user, cfg, seed))
    n1 = len(user.periods[1].sessions)
    # Inside period 1 after its first session: the rest of period 1, its end, then every later step.
    resumed = list(episode_schedule(user, cfg, seed, start=(1, 1)))
    first = full.index(SessionStep(period=1, session=1, sessions=n1, rounds=rounds_for(user, cfg, 1),
                                   seed=derive_seed(seed, 1, 1), spec=user.periods[1].sessions[1]))
    assert resumed == full[first:]
    # Every session of the period was played before the restart: only the period's end is left of it.
    after_all = list(episode_schedule(user, cfg, seed, start=(1, n1)))
    assert after_all[0] == PeriodEnd(period=1)
    assert after_all == full[full.index(PeriodEnd(period=1)):]
    assert list(episode_schedule(user, cfg, seed, start=(len(user.periods), 0))) == []
