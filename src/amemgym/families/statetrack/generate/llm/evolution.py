"""Step 5: how the state changes period by period, and the life events that explain each change."""

from __future__ import annotations

from datetime import date
from typing import Any

from .....config import HIGH_TEMPERATURE
from .....textsim import plain
from ...data import UserProfile
from .base import GenContext, StepFailure, ask_json
from .formats import arr, bullet_schema, bullet_state, longest, name_tokens, obj, string
from .records import Change, Event, EvolutionOut, EvolvedPeriod


def add_months(d: date, months: int) -> date:
    """``d`` moved by whole months, the day clamped to the target month's length."""
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    next_first = date(year + month // 12, month % 12 + 1, 1)
    last_day = (next_first - date(year, month, 1)).days
    return date(year, month, min(d.day, last_day))


def period_bounds(start_date: str, months: int, period: int) -> tuple[date, date]:
    """Start and end dates of ``period`` (>= 1); period 1 starts at ``start_date``."""
    start = date.fromisoformat(start_date)
    return add_months(start, months * (period - 1)), add_months(start, months * period)


def changes_schema(schema: dict[str, list[str]], state: dict[str, str], eligible: list[str], lo: int, hi: int
                   ) -> dict[str, Any]:
    """The reply schema: between ``lo`` and ``hi`` changes, each of an eligible variable to another value."""
    options = [
        obj(variable=string([var]), new_value=string([x for x in schema[var] if x != state[var]]))
        for var in eligible
    ]
    return obj(changes=arr({"anyOf": options}, lo, hi))


def check_changes(
    value: dict[str, Any], schema: dict[str, list[str]], state: dict[str, str], counts: dict[str, int],
    max_changes: int, lo: int, hi: int,
) -> str | None:
    """Count in range; each variable known, changed once, under its cap, to a different known value."""
    changes = value["changes"]
    if not lo <= len(changes) <= hi:
        return f"propose between {lo} and {hi} changes, not {len(changes)}"
    seen: set[str] = set()
    for c in changes:
        var, new = c["variable"], c["new_value"]
        if var not in schema:
            return f"{var!r} is not a variable of the schema"
        if var in seen:
            return f"{var} is changed twice; change each variable at most once per period"
        seen.add(var)
        if counts[var] >= max_changes:
            return f"{var} has already changed {counts[var]} times, the maximum; pick another variable"
        if new not in schema[var]:
            return f"{new!r} is not a value of {var} ({', '.join(schema[var])})"
        if new == state[var]:
            return f"{var} is already {new!r}; a change must move it to a different value"
    return None


def first_changes(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with only the first proposed change of each variable (small models repeat a variable).

    The rules are then checked on what is kept, so the count must still be in range.
    """
    seen: set[str] = set()
    changes = []
    for c in value["changes"]:
        if c["variable"] not in seen:
            seen.add(c["variable"])
            changes.append(c)
    return {**value, "changes": changes}


def check_events(value: dict[str, Any], changed: list[str]) -> str | None:
    """Every changed variable explained by exactly one event; events only name changed variables."""
    owner: dict[str, int] = {}
    for i, e in enumerate(value["events"], start=1):
        if not e["variables"]:
            return f"event {i} explains no change"
        for var in dict.fromkeys(e["variables"]):  # a repeat within one event is harmless
            if var not in changed:
                return f"event {i} lists {var!r}, which did not change in this period"
            if var in owner:
                return f"{var} is explained by events {owner[var]} and {i}; give each change exactly one event"
            owner[var] = i
    missing = [v for v in changed if v not in owner]
    return f"no event explains the change of {', '.join(missing)}" if missing else None


def _history(periods: list[EvolvedPeriod]) -> str:
    if not periods:
        return "(none yet: this is the first period)"
    return "\n".join(
        f"- {p.period_start} to {p.period_end}: "
        + "; ".join(f"{var}: {c.old} -> {c.new}" for var, c in p.changes.items())
        for p in periods
    )


async def _propose(
    ctx: GenContext, period: int, profile: UserProfile, schema: dict[str, list[str]], state: dict[str, str],
    counts: dict[str, int], history: list[EvolvedPeriod], bounds: tuple[date, date],
) -> dict[str, Change]:
    cfg = ctx.cfg
    eligible = [v for v in schema if counts[v] < cfg.max_changes_per_state]
    if not eligible:
        raise StepFailure("evolution.updates", f"[{period}] every variable has reached max_changes_per_state")
    n = cfg.num_changes_per_period
    lo, hi = min(max(1, n - 1), len(eligible)), min(n + 1, len(eligible))
    count_lines = "\n".join(
        f"- {v}: changed {counts[v]} of at most {cfg.max_changes_per_state} times"
        + ("" if v in eligible else " (cannot change any more)")
        for v in schema
    )
    value = await ask_json(
        ctx, "evolution.updates", "gen_state_updates", changes_schema(schema, state, eligible, lo, hi),
        lambda v: check_changes(first_changes(v), schema, state, counts, cfg.max_changes_per_state, lo, hi),
        max_tokens=40 + hi * (16 + name_tokens(longest(eligible), longest(x for v in eligible for x in schema[v]))),
        key=(period,), temperature=HIGH_TEMPERATURE,
        profile=profile.formatted_str, period_start=bounds[0].isoformat(), period_end=bounds[1].isoformat(),
        months=cfg.num_months_per_period, remaining=cfg.num_periods - period, schema=bullet_schema(schema),
        state=bullet_state(state), history=_history(history), counts=count_lines, num_changes=n, lo=lo, hi=hi,
    )
    kept = first_changes(value)
    if len(kept["changes"]) < len(value["changes"]):
        ctx.step("evolution.updates_deduplicated").add_unit("first_try")
    return {c["variable"]: Change(old=state[c["variable"]], new=c["new_value"]) for c in kept["changes"]}


async def _explain(
    ctx: GenContext, period: int, profile: UserProfile, state: dict[str, str], changes: dict[str, Change],
    bounds: tuple[date, date],
) -> tuple[str, list[Event]]:
    changed = list(changes)
    unchanged = [v for v in state if v not in changes]
    reply_schema = obj(
        period_summary=string(),
        events=arr(obj(event=string(), variables=arr(string(changed), 1, len(changed))), 1, len(changed)),
    )
    facts: dict[str, Any] = {
        "profile": profile.formatted_str, "period_start": bounds[0].isoformat(), "period_end": bounds[1].isoformat(),
        "changes": "\n".join(f"- {v}: {c.old} -> {c.new}" for v, c in changes.items()),
        "unchanged": bullet_state(state, unchanged) if unchanged else "(none)",
    }
    try:
        value = await ask_json(
            ctx, "evolution.events", "gen_life_events", reply_schema, lambda v: check_events(v, changed),
            max_tokens=120 + 110 * len(changed), key=(period,), **facts,
        )
    except StepFailure:
        # Small models keep assigning one change to two events; one event per change is always valid.
        return await _one_event_per_change(ctx, period, changes, facts)
    events = [Event(event=e["event"].strip(), variables=[v for v in changed if v in e["variables"]])
              for e in value["events"]]
    return value["period_summary"].strip(), events


async def _one_event_per_change(ctx: GenContext, period: int, changes: dict[str, Change], facts: dict[str, Any]
                                ) -> tuple[str, list[Event]]:
    """The fallback of :func:`_explain`, a step of its own so the report shows how often it was needed.

    Its own last resort, for a model that cannot even close this JSON: each change stated plainly.
    """
    changed = list(changes)
    each = obj(period_summary=string(), events=obj(**{v: string() for v in changed}))
    try:
        value = await ask_json(
            ctx, "evolution.events_each", "gen_life_events_each", each, None,
            max_tokens=120 + 110 * len(changed), key=(period,),
            event_keys=", ".join(f'"{v}": ...' for v in changed), **facts,
        )
    except StepFailure:
        ctx.step("evolution.events_plain").add_unit("first_try")
        stated = [Event(event=f"Their {plain(v)} went from {plain(c.old)} to {plain(c.new)}.", variables=[v])
                  for v, c in changes.items()]
        return " ".join(e.event for e in stated), stated
    return value["period_summary"].strip(), [Event(event=value["events"][v].strip(), variables=[v]) for v in changed]


async def run_evolution(
    ctx: GenContext, profile: UserProfile, schema: dict[str, list[str]], initial: dict[str, str]
) -> EvolutionOut:
    """Evolve the state through ``num_periods`` periods, one proposal and one explanation per period."""
    cfg = ctx.cfg
    state = dict(initial)
    counts = dict.fromkeys(schema, 0)
    periods: list[EvolvedPeriod] = []
    for p in range(1, cfg.num_periods + 1):
        bounds = period_bounds(cfg.start_date, cfg.num_months_per_period, p)
        changes = await _propose(ctx, p, profile, schema, state, counts, periods, bounds)
        summary, events = await _explain(ctx, p, profile, state, changes, bounds)
        state = {**state, **{v: c.new for v, c in changes.items()}}
        for v in changes:
            counts[v] += 1
        periods.append(EvolvedPeriod(
            period_start=bounds[0].isoformat(), period_end=bounds[1].isoformat(), summary=summary,
            changes=changes, events=events, state=state,
        ))
    return EvolutionOut(periods=periods)
