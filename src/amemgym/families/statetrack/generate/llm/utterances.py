"""Step 7: the opening utterance of every session, and the exposure check that it reveals its values."""

from __future__ import annotations

from typing import Any

from .....textsim import plain
from ...data import UserProfile
from .base import GenContext, StepFailure, ask_json, gather_in_order
from .formats import arr, bullet_schema, bullet_state, longest, name_tokens, named_values, obj, string, unquote
from .records import EvolvedPeriod, Utterance, UtterancesOut

MAX_PER_UTTERANCE = 3


def _quotes(text: str, schema: dict[str, list[str]], variables: list[str]) -> str | None:
    quoted = named_values(text, [v for var in variables for v in schema[var]])
    if quoted:
        return f"it quotes the value name(s) {', '.join(quoted)}; imply them through the situation instead"
    return None


def check_initial(value: dict[str, Any], schema: dict[str, list[str]]) -> str | None:
    """Every variable exposed by some utterance, 1-3 distinct variables each, no quoted value names."""
    covered: set[str] = set()
    for i, u in enumerate(value["utterances"], start=1):
        variables = list(dict.fromkeys(u["variables"]))  # a repeat within one utterance is harmless
        if not 1 <= len(variables) <= MAX_PER_UTTERANCE:
            return f"utterance {i} must reveal 1 to {MAX_PER_UTTERANCE} variables, not {len(variables)}"
        unknown = [v for v in variables if v not in schema]
        if unknown:
            return f"utterance {i} lists unknown variable(s) {', '.join(unknown)}"
        problem = _quotes(u["query"], schema, variables)
        if problem:
            return f"utterance {i}: {problem}"
        covered.update(variables)
    missing = [v for v in schema if v not in covered]
    return f"no utterance reveals {', '.join(missing)}; add utterances for them" if missing else None


async def _initial(ctx: GenContext, profile: UserProfile, schema: dict[str, list[str]], state: dict[str, str]
                   ) -> list[Utterance]:
    n = len(schema)
    lo = -(-n // MAX_PER_UTTERANCE)
    reply = obj(utterances=arr(obj(query=string(), variables=arr(string(list(schema)), 1, MAX_PER_UTTERANCE)), lo, n))
    try:
        value = await ask_json(
            ctx, "utterances.write", "gen_utterances_initial", reply, lambda v: check_initial(v, schema),
            max_tokens=60 + 90 * n, key=(0,), profile=profile.formatted_str, date=ctx.cfg.start_date,
            state=bullet_state(state), schema=bullet_schema(schema), min_utterances=lo,
        )
    except StepFailure:
        # Covering every variable in one reply is too much for small models; one message per variable is
        # a valid (if longer) first period. Its calls are a step of their own, so the report shows it.
        return await gather_in_order(_single(ctx, profile, schema, state, var) for var in schema)
    return [
        Utterance(query=u["query"].strip(), exposed_states={v: state[v] for v in schema if v in u["variables"]})
        for u in value["utterances"]
    ]


async def _single(ctx: GenContext, profile: UserProfile, schema: dict[str, list[str]], state: dict[str, str],
                  var: str) -> Utterance:
    query = await _write_one(
        ctx, "utterances.write_single", "gen_utterance_single", (0, list(schema).index(var)), schema, [var],
        profile=profile.formatted_str, date=ctx.cfg.start_date, variable=plain(var), value=plain(state[var]),
        alternatives=", ".join(plain(x) for x in schema[var] if x != state[var]),
    )
    return Utterance(query=query, exposed_states={var: state[var]})


async def _update(
    ctx: GenContext, p: int, j: int, profile: UserProfile, schema: dict[str, list[str]], period: EvolvedPeriod
) -> Utterance:
    event = period.events[j]
    variables = event.variables
    values = [x for var in schema for x in schema[var]]
    query = await _write_one(
        ctx, "utterances.write", "gen_utterance_update", (p, j), schema, variables,
        profile=profile.formatted_str, date=period.period_end, event=unquote(event.event, values),
        changes="\n".join(f"- {plain(v)}: {plain(period.changes[v].old)} -> {plain(period.changes[v].new)}"
                           for v in variables),
        schema="\n".join(f"- {plain(v)}: {', '.join(map(plain, schema[v]))}" for v in variables),
    )
    return Utterance(query=query, exposed_states={v: period.changes[v].new for v in variables})


async def _write_one(ctx: GenContext, step: str, prompt: str, key: tuple[int, int], schema: dict[str, list[str]],
                     variables: list[str], /, **facts: Any) -> str:
    """One utterance that must not quote value names; when the model keeps quoting them, non-strict
    generation puts the quoted names in plain words and lists the utterance as unverified."""
    try:
        value = await ask_json(ctx, step, prompt, obj(query=string()), lambda v: _quotes(v["query"], schema, variables),
                               max_tokens=160, key=key, **facts)
    except StepFailure as exc:
        if exc.last is None:
            raise
        ctx.keep_unverified(step, (*key, 0), f"period {key[0]}, session {key[1] + 1}: {exc.reason}; the quoted "
                                             "names were put in plain words")
        return unquote(str(exc.last["query"]), [x for v in variables for x in schema[v]]).strip()
    return str(value["query"]).strip()


async def _read(ctx: GenContext, key: tuple[int, int, int], query: str, schema: dict[str, list[str]],
                variables: list[str]) -> dict[str, str] | str:
    """The values a reader recovers from ``query``, or why the reader gave no usable reply."""
    reply = obj(**{v: string(schema[v]) for v in variables})
    try:
        value: dict[str, str] = await ask_json(
            ctx, "utterances.exposure", "gen_exposure_check", reply, None,
            max_tokens=20 + name_tokens(*variables, *(longest(schema[v]) for v in variables)), key=key,
            count_unit=False, utterance=query, candidates=bullet_schema(schema, variables),
        )
    except StepFailure as exc:
        return exc.reason
    return value


async def _settle(ctx: GenContext, p: int, j: int, u: Utterance, schema: dict[str, list[str]]) -> Utterance:
    """``u`` once a reader who sees only the utterance recovers every exposed value, refining it if not.

    When the refinements run out, :meth:`GenContext.give_up` decides: the user fails (strict) or the last
    utterance is kept and listed as unverified.
    """
    stats = ctx.step("utterances.exposure")
    variables = list(u.exposed_states)
    query = u.query
    where = f"period {p}, session {j + 1}"
    read = await _read(ctx, (p, j, 0), query, schema, variables)
    if isinstance(read, str):
        ctx.give_up("utterances.exposure", (p, j, 1), f"{where}: the reader gave no usable reply ({read})")
        return u
    wrong = [v for v in variables if read[v] != u.exposed_states[v]]
    if not wrong:
        stats.add_unit("first_try")
        return u
    for r in range(1, ctx.limits.refinements + 1):
        try:
            value = await ask_json(
                ctx, "utterances.refine", "gen_refine_utterance", obj(query=string()),
                lambda v: _quotes(v["query"], schema, variables), max_tokens=160, key=(p, j, r),
                utterance=query, intended=bullet_state(u.exposed_states),
                misread="\n".join(f"- {v}: read as {read[v]}, but it is {u.exposed_states[v]}" for v in wrong),
                schema=bullet_schema(schema, variables),
            )
        except StepFailure as exc:
            ctx.give_up("utterances.exposure", (p, j, 1), f"{where}: no usable refinement ({exc.reason})")
            return Utterance(query=query, exposed_states=u.exposed_states)
        query = value["query"].strip()
        read = await _read(ctx, (p, j, r), query, schema, variables)
        if isinstance(read, str):
            ctx.give_up("utterances.exposure", (p, j, 1), f"{where}: the reader gave no usable reply ({read})")
            return Utterance(query=query, exposed_states=u.exposed_states)
        wrong = [v for v in variables if read[v] != u.exposed_states[v]]
        if not wrong:
            stats.add_unit("after_retry")
            return Utterance(query=query, exposed_states=u.exposed_states)
    ctx.give_up("utterances.exposure", (p, j, 1),
                f"{where}: {', '.join(wrong)} still not recovered after {ctx.limits.refinements} refinements")
    return Utterance(query=query, exposed_states=u.exposed_states)


async def run_utterances(
    ctx: GenContext, profile: UserProfile, schema: dict[str, list[str]], initial: dict[str, str],
    periods: list[EvolvedPeriod],
) -> UtterancesOut:
    """Write and check the opening utterances of every period (period 0 first)."""
    async def period_drafts(p: int, period: EvolvedPeriod) -> list[Utterance]:
        return await gather_in_order(_update(ctx, p, j, profile, schema, period) for j in range(len(period.events)))

    async def period_checked(p: int, drafts: list[Utterance]) -> list[Utterance]:
        return await gather_in_order(_settle(ctx, p, j, u, schema) for j, u in enumerate(drafts))

    drafts = [await _initial(ctx, profile, schema, initial)]
    drafts += await gather_in_order(period_drafts(p, period) for p, period in enumerate(periods, start=1))
    checked = await gather_in_order(period_checked(p, us) for p, us in enumerate(drafts))
    return UtterancesOut(periods=checked, unverified=ctx.unverified_list())
