"""Step 4: the user's state at the start: one value per variable, fitting the profile."""

from __future__ import annotations

from typing import Any

from ...data import UserProfile
from .base import GenContext, ask_json
from .formats import bullet_schema, longest, name_tokens, obj, string
from .records import InitialStateOut


def state_schema_json(schema: dict[str, list[str]]) -> dict[str, Any]:
    """The reply schema: one allowed value per variable."""
    return obj(state=obj(**{var: string(values) for var, values in schema.items()}))


def check_state(value: dict[str, Any], schema: dict[str, list[str]]) -> str | None:
    """Every variable present with one of its values."""
    state = value["state"]
    for var, values in schema.items():
        if var not in state:
            return f"the state lacks the variable {var!r}"
        if state[var] not in values:
            return f"{var} = {state[var]!r} is not one of its values ({', '.join(values)})"
    extra = [v for v in state if v not in schema]
    return f"unknown variable(s) {', '.join(extra)}" if extra else None


async def run_initial_state(
    ctx: GenContext, profile: UserProfile, schema: dict[str, list[str]], total_months: int
) -> InitialStateOut:
    """Ask for the initial state and validate it against the schema."""
    value = await ask_json(
        ctx, "initial_state", "gen_initial_state", state_schema_json(schema), lambda v: check_state(v, schema),
        max_tokens=40 + name_tokens(*schema, *map(longest, schema.values())), profile=profile.formatted_str,
        start_date=ctx.cfg.start_date, total_months=total_months, schema=bullet_schema(schema),
    )
    return InitialStateOut(state={var: value["state"][var] for var in schema})
