"""The episode schedule, written once: which session comes next, how many rounds it has, its seed, and when
a period ends and its questions are due.

Both the runner's :class:`~amemgym.families.statetrack.episode.Episode` and the Gym environment's
:class:`~amemgym.train.episode.PolicyEpisode` walk a user's timeline through :func:`episode_schedule`, and
both build their user simulator with :func:`build_simulator`, so a policy meets the same user turns, with
the same seeds, in both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...config import AppConfig
from ...llm.client import LLMClient
from ...seeding import derive_seed
from .data.model import Session, UserEnv
from .simulate import UserSimulator


def rounds_for(user: UserEnv, cfg: AppConfig, period: int) -> int:
    """Rounds per session: the environment's own protocol if it records one, else the config's."""
    proto = user.amemgym
    init = proto.num_rounds_init if proto and proto.num_rounds_init else cfg.env.num_rounds_init
    update = proto.num_rounds_update if proto and proto.num_rounds_update else cfg.env.num_rounds_update
    return init if period == 0 else update


def user_seed(cfg: AppConfig, user: UserEnv) -> int:
    """The per-user seed every simulator call, session and answer fallback of the user derives from."""
    return derive_seed(cfg.run.seed, user.id)


def build_simulator(llm: LLMClient, cfg: AppConfig) -> UserSimulator:
    """The user simulator with the run's history, token budget and leak re-simulation settings."""
    return UserSimulator(
        llm, history_messages=cfg.run.simulator_history_turns, max_tokens=cfg.run.simulator_max_tokens,
        resimulate_attempts=cfg.run.resimulate_attempts if cfg.run.resimulate_leaks else 0,
    )


@dataclass(frozen=True)
class SessionStep:
    """Play one session.

    Attributes:
        period: the period index.
        session: the session index within the period.
        sessions: how many sessions the period has.
        rounds: user turns in the session.
        seed: the session's seed (derived from the user seed, period and session).
        spec: the session as the environment describes it (opening query, time, exposed variables).
    """

    period: int
    session: int
    sessions: int
    rounds: int
    seed: int
    spec: Session


@dataclass(frozen=True)
class PeriodEnd:
    """Every session of ``period`` is played: snapshot the memory and put the period's questions."""

    period: int


Step = SessionStep | PeriodEnd


def episode_schedule(user: UserEnv, cfg: AppConfig, seed: int, start: tuple[int, int] = (0, 0)) -> Iterator[Step]:
    """The steps of a user's episode in order, from ``start`` = (period, session) on.

    A resumed episode starts inside a period: that period's earlier sessions are skipped, but its
    :class:`PeriodEnd` still comes (also when every session was played before the restart).

    Args:
        user: the simulated user.
        cfg: rounds fallback (``cfg.env``) when the environment records no protocol.
        seed: the user seed (see :func:`user_seed`).
        start: the first (period, session) still to play.
    """
    start_p, start_s = start
    for p in range(start_p, len(user.periods)):
        period = user.periods[p]
        rounds = rounds_for(user, cfg, p)
        for s in range(start_s if p == start_p else 0, len(period.sessions)):
            yield SessionStep(period=p, session=s, sessions=len(period.sessions), rounds=rounds,
                              seed=derive_seed(seed, p, s), spec=period.sessions[s])
        yield PeriodEnd(period=p)
