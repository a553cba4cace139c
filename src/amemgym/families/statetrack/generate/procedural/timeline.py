"""How a user's state evolves: initial values, changes per period, events and session times."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .....config import EnvConfig
from .....errors import ConfigError
from .plan import UserPlan

# Sessions happen in the evening, as in the original release; drawing distinct 15-minute slots (plus a
# random minute inside the slot) keeps times unique and easy to order.
_EVENING_START = 18 * 60
_SLOTS_PER_EVENING = 20
_SLOT_MINUTES = 15
_MIN_WINDOW_DAYS = 7


@dataclass(frozen=True)
class Change:
    """One variable's change within a period (``old`` is None in period 0)."""

    variable: str
    old: str | None
    new: str


@dataclass(frozen=True)
class PeriodPlan:
    """One period of the timeline: its dates, end state, changes and the exposure of each session."""

    index: int
    start: str | None
    end: str
    state: dict[str, str]
    changes: tuple[Change, ...]
    update_cnts: dict[str, int]
    sessions: tuple[tuple[Change, ...], ...]
    session_times: tuple[str, ...]


def add_months(day: date, months: int) -> date:
    """``day`` shifted by ``months`` calendar months, clamped to the end of a shorter month."""
    total = day.month - 1 + months
    year, month = day.year + total // 12, total % 12 + 1
    for dd in range(day.day, 27, -1):
        try:
            return date(year, month, dd)
        except ValueError:
            continue
    return date(year, month, min(day.day, 28))


def evolve(cfg: EnvConfig, rng: random.Random, plan: UserPlan) -> tuple[PeriodPlan, ...]:
    """The full timeline: period 0 (initial state) then ``cfg.num_periods`` periods of changes.

    Raises:
        ConfigError: if the variables run out of allowed changes (the plan is sized so they do not).
    """
    start = datetime.strptime(cfg.start_date, "%Y-%m-%d").date()
    values = {uv.name: uv.values for uv in plan.variables}
    domain_of = {uv.name: uv.domain.name for uv in plan.variables}
    asked = {v for uq in plan.questions for v in uq.variables}
    state = {name: rng.choice(vals) for name, vals in values.items()}
    counts = dict.fromkeys(values, 0)
    initial = tuple(Change(v, None, state[v]) for v in values)
    groups = _initial_groups(rng, initial, domain_of)
    periods = [
        PeriodPlan(
            0, None, start.isoformat(), dict(state), initial, dict(counts), groups,
            _session_times(rng, start, len(groups)),
        )
    ]
    n, cap = cfg.num_changes_per_period, cfg.max_changes_per_state
    floor = max(1, n - 1)
    for p in range(1, cfg.num_periods + 1):
        eligible = [v for v in values if counts[v] < cap]
        room = sum(cap - counts[v] for v in values) - (cfg.num_periods - p) * floor
        k = min(rng.choice([c for c in (n - 1, n, n + 1) if c >= 1]), len(eligible), room)
        if k < floor:
            raise ConfigError(
                f"config {cfg.name}: period {p} can change only {k} variables (max_changes_per_state={cap}); "
                "the user has too few variables for this many periods"
            )
        weights = {v: (cap - counts[v]) * (4 if v in asked else 1) for v in eligible}
        changes = []
        for var in _weighted_sample(rng, weights, k):
            new = rng.choice([x for x in values[var] if x != state[var]])
            changes.append(Change(var, state[var], new))
            state[var] = new
            counts[var] += 1
        events = _events(rng, changes, domain_of)
        end = add_months(start, p * cfg.num_months_per_period)
        periods.append(
            PeriodPlan(
                p, add_months(start, (p - 1) * cfg.num_months_per_period).isoformat(), end.isoformat(),
                dict(state), tuple(changes), dict(counts), events, _session_times(rng, end, len(events)),
            )
        )
    return tuple(periods)


def _weighted_sample(rng: random.Random, weights: dict[str, int], k: int) -> list[str]:
    pool = dict(weights)
    out: list[str] = []
    for _ in range(k):
        pick = rng.random() * sum(pool.values())
        names = list(pool)
        chosen = names[-1]  # float rounding can leave pick just above the last bound
        for name in names:
            pick -= pool[name]
            if pick < 0:
                chosen = name
                break
        out.append(chosen)
        del pool[chosen]
    return out


def _initial_groups(
    rng: random.Random, initial: tuple[Change, ...], domain_of: dict[str, str]
) -> tuple[tuple[Change, ...], ...]:
    # One domain per session keeps each opening utterance about one area of life.
    by_domain: dict[str, list[Change]] = {}
    for ch in initial:
        by_domain.setdefault(domain_of[ch.variable], []).append(ch)
    groups: list[tuple[Change, ...]] = []
    for items in by_domain.values():
        items = list(items)
        rng.shuffle(items)
        while items:
            size = rng.choice((1, 2, 2, 3))
            groups.append(tuple(items[:size]))
            items = items[size:]
    rng.shuffle(groups)
    return tuple(groups)


def _events(
    rng: random.Random, changes: list[Change], domain_of: dict[str, str]
) -> tuple[tuple[Change, ...], ...]:
    # Two changes of one domain read as one life event (a new job also changes the hours).
    by_domain: dict[str, list[Change]] = {}
    for ch in changes:
        by_domain.setdefault(domain_of[ch.variable], []).append(ch)
    events: list[tuple[Change, ...]] = []
    for items in by_domain.values():
        while items:
            size = 2 if len(items) >= 2 and rng.random() < 0.5 else 1
            events.append(tuple(items[:size]))
            items = items[size:]
    rng.shuffle(events)
    return tuple(events)


def _session_times(rng: random.Random, end: date, k: int) -> tuple[str, ...]:
    window = max(_MIN_WINDOW_DAYS, k + 3)
    slots = sorted(rng.sample(range(window * _SLOTS_PER_EVENING), k))
    out = []
    for slot in slots:
        day = end - timedelta(days=window - slot // _SLOTS_PER_EVENING)
        minute = _EVENING_START + (slot % _SLOTS_PER_EVENING) * _SLOT_MINUTES + rng.randrange(_SLOT_MINUTES)
        out.append(f"{day.isoformat()} {minute // 60:02d}:{minute % 60:02d}")
    return tuple(out)
