"""Checks beyond JSON shape: the environment must be internally consistent.

Each problem is one string ``<json path>: <what is wrong>``; loading fails on the first ones.
"""

from __future__ import annotations

from .model import Environment, UserEnv, parse_time


def _check_time(problems: list[str], path: str, value: str | None, *, allow_null: bool = False) -> None:
    if value is None:
        if not allow_null:
            problems.append(f"{path}: a date is required")
        return
    try:
        parse_time(value)
    except ValueError as exc:
        problems.append(f"{path}: {exc}")


def _time_or_none(value: str | None) -> str | None:
    """``value`` normalised for ordering (``parse_time``'s ISO form), or None when it is missing or malformed
    (already reported by :func:`_check_time`)."""
    if value is None:
        return None
    try:
        return parse_time(value).isoformat()
    except ValueError:
        return None


def check_user(user: UserEnv, i: int) -> list[str]:
    """All consistency problems of one user item at list index ``i``."""
    problems: list[str] = []
    schema = user.state_schema
    at = f"[{i}]"
    _check_time(problems, f"{at}.start_time", user.start_time)
    for var, values in schema.items():
        if len(values) < 2:
            problems.append(f"{at}.state_schema.{var}: needs at least 2 values, got {len(values)}")
        if len(set(values)) != len(values):
            problems.append(f"{at}.state_schema.{var}: duplicate values")
        elif len({v.strip() for v in values}) != len(values):
            # A reply is read with its spaces trimmed: "low" and "low " could never be told apart.
            problems.append(f"{at}.state_schema.{var}: values that differ only in leading or trailing spaces")
    if not user.periods:
        problems.append(f"{at}.periods: no periods")
    previous: dict[str, str] | None = None
    last_time: tuple[str, str] | None = None  # (path, time) of the latest session so far
    for p, period in enumerate(user.periods):
        pp = f"{at}.periods[{p}]"
        _check_time(problems, f"{pp}.period_start", period.period_start, allow_null=p == 0)
        _check_time(problems, f"{pp}.period_end", period.period_end)
        if set(period.state) != set(schema):
            missing = sorted(set(schema) - set(period.state))
            extra = sorted(set(period.state) - set(schema))
            detail = f"missing {missing}" if missing else f"not in state_schema {extra}"
            problems.append(f"{pp}.state: variables do not match state_schema ({detail})")
        for var, value in period.state.items():
            if var in schema and value not in schema[var]:
                problems.append(f"{pp}.state.{var}: value {value!r} is not in state_schema.{var}")
        for var, upd in period.updates.items():
            up = f"{pp}.updates.{var}"
            if var not in schema:
                problems.append(f"{up}: variable is not in state_schema")
                continue
            if upd.new not in schema[var]:
                problems.append(f"{up}.new: value {upd.new!r} is not in state_schema.{var}")
            if period.state.get(var) != upd.new:
                problems.append(f"{up}.new: {upd.new!r} differs from the period's state {period.state.get(var)!r}")
            if p == 0:
                if upd.old is not None:
                    problems.append(f"{up}.old: must be null in period 0")
            elif previous is not None and upd.old != previous.get(var):
                problems.append(f"{up}.old: {upd.old!r} differs from the previous state {previous.get(var)!r}")
        if previous is not None:
            for var, value in period.state.items():
                if var not in period.updates and previous.get(var) != value:
                    problems.append(f"{pp}.state.{var}: changed without an entry in updates")
        for s, session in enumerate(period.sessions):
            sp = f"{pp}.sessions[{s}]"
            _check_time(problems, f"{sp}.session_time", session.session_time)
            when = _time_or_none(session.session_time)
            if when is not None:
                # The conversation is one timeline: each opening tells the agent the current time, and "current
                # state" means the latest one; a session dated before the one it follows breaks both.
                if last_time is not None and when < last_time[1]:
                    problems.append(f"{sp}.session_time: {session.session_time} is before {last_time[0]}")
                last_time = (f"{sp}.session_time ({session.session_time})", when)
            for var, value in session.exposed_states.items():
                if var not in schema:
                    problems.append(f"{sp}.exposed_states.{var}: variable is not in state_schema")
                elif value not in schema[var]:
                    problems.append(f"{sp}.exposed_states.{var}: value {value!r} is not in state_schema.{var}")
        previous = period.state
    for q, qa in enumerate(user.qas):
        qp = f"{at}.qas[{q}]"
        unknown = [v for v in qa.required_info if v not in schema]
        if unknown:
            problems.append(f"{qp}.required_info: {unknown} not in state_schema")
            continue
        if len(set(qa.required_info)) != len(qa.required_info):
            # Probes are scored per (question, variable) item: a repeated variable would be one item, not two.
            problems.append(f"{qp}.required_info: names a variable more than once")
            continue
        n = len(qa.required_info)
        for c, choice in enumerate(qa.answer_choices):
            cp = f"{qp}.answer_choices[{c}].state"
            if len(choice.state) != n:
                problems.append(f"{cp}: expected {n} values, got {len(choice.state)}")
                continue
            for var, value in zip(qa.required_info, choice.state, strict=True):
                if value not in schema[var]:
                    problems.append(f"{cp}: value {value!r} is not in state_schema.{var}")
        states = [tuple(c.state) for c in qa.answer_choices]
        if len(set(states)) != len(states):
            problems.append(f"{qp}.answer_choices: two choices share a value combination")
        for p, period in enumerate(user.periods):
            gold = [period.state.get(v) for v in qa.required_info]
            hits = sum(1 for c in qa.answer_choices if c.state == gold)
            if hits != 1:
                problems.append(f"{qp}.answer_choices: {hits} choices match the state of period {p} {gold}, expected 1")
    return problems


def check_environment(env: Environment, *, per_user: bool = True) -> list[str]:
    """All consistency problems of an environment, users in order, then cross-user checks.

    ``per_user=False`` runs only the cross-user checks (for a loader that already checked each user).
    """
    problems: list[str] = []
    seen: set[str] = set()
    for i, user in enumerate(env.users):
        if user.id in seen:
            problems.append(f"[{i}].id: duplicate user id {user.id!r}")
        seen.add(user.id)
        if per_user:
            problems.extend(check_user(user, i))
    counts = {len(u.periods) for u in env.users}
    if len(counts) > 1:
        first = len(env.users[0].periods)
        for i, user in enumerate(env.users):
            if len(user.periods) != first:
                problems.append(f"[{i}].periods: {len(user.periods)} periods, but user [0] has {first}")
                break
    return problems
