"""Step 8: session times and the assembly of one user item, checked like any loaded file."""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta

from ...data import QA, Period, Session, StateUpdate, UserEnv, UserProfile
from ...data.checks import check_user
from ...data.io import with_protocol
from .base import GenContext, StepFailure
from .records import EvolvedPeriod, SchemaOut, Utterance

TIME_FORMAT = "%Y-%m-%d %H:%M"
EVENING_HOURS = (18, 22)
MIN_WINDOW_DAYS = 7


def session_times(period_end: date, n: int, rng: random.Random) -> list[str]:
    """``n`` increasing evening times on distinct days among the last days before ``period_end``."""
    window = max(MIN_WINDOW_DAYS, n)
    days_back = sorted(rng.sample(range(1, window + 1), n), reverse=True)
    out = []
    for back in days_back:
        at = time(rng.randint(*EVENING_HOURS), rng.randint(0, 59))
        out.append(datetime.combine(period_end - timedelta(days=back), at).strftime(TIME_FORMAT))
    return out


def _sessions(utterances: list[Utterance], events: list[str | None], times: list[str]) -> list[Session]:
    return [
        Session(event=e, exposed_states=dict(u.exposed_states), query=u.query, session_time=t)
        for u, e, t in zip(utterances, events, times, strict=True)
    ]


def assemble_user(
    ctx: GenContext, user_id: str, profile: UserProfile, schema: SchemaOut, initial: dict[str, str],
    periods: list[EvolvedPeriod], qas: list[QA], utterances: list[list[Utterance]], run_seed: int,
) -> UserEnv:
    """Build the user item (original layout plus ``_amemgym``) and check it.

    Raises:
        StepFailure: if the item fails :func:`amemgym.families.statetrack.data.checks.check_user`.
    """
    cfg = ctx.cfg
    variables = list(schema.state_schema)
    start = date.fromisoformat(cfg.start_date)
    counts = dict.fromkeys(variables, 0)
    first = utterances[0]
    out = [Period(
        period_start=None, period_end=cfg.start_date, period_summary=None, state=dict(initial),
        updates={v: StateUpdate(old=None, new=initial[v]) for v in variables}, update_cnts=dict(counts),
        sessions=_sessions(first, [None] * len(first), session_times(start, len(first), ctx.rng("times", 0))),
    )]
    for p, period in enumerate(periods, start=1):
        for v in period.changes:
            counts[v] += 1
        utts = utterances[p]
        if len(utts) != len(period.events):
            raise StepFailure("assemble", f"period {p} has {len(period.events)} events but {len(utts)} utterances")
        times = session_times(date.fromisoformat(period.period_end), len(utts), ctx.rng("times", p))
        out.append(Period(
            period_start=period.period_start, period_end=period.period_end, period_summary=period.summary,
            state=dict(period.state),
            updates={v: StateUpdate(old=c.old, new=c.new) for v, c in period.changes.items()},
            update_cnts=dict(counts), sessions=_sessions(utts, [e.event for e in period.events], times),
        ))
    user = UserEnv(
        id=user_id, start_time=cfg.start_date, user_profile=profile, state_schema=schema.state_schema,
        periods=out, qas=qas,
    )
    user = with_protocol(
        user, generator="llm", seed=run_seed, config_name=cfg.name, num_rounds_init=cfg.num_rounds_init,
        num_rounds_update=cfg.num_rounds_update,
    )
    problems = check_user(user, 0)
    for p, item in enumerate(user.periods):
        for j, session in enumerate(item.sessions):
            off = [v for v, x in session.exposed_states.items() if item.state.get(v) != x]
            if off:
                problems.append(f"periods[{p}].sessions[{j}].exposed_states: {off} differ from the period's state")
            if p and set(session.exposed_states) - set(item.updates):
                problems.append(f"periods[{p}].sessions[{j}].exposed_states: exposes variables that did not change")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StepFailure("assemble", f"the user item fails its checks: {problems[0]}{more}")
    return user
