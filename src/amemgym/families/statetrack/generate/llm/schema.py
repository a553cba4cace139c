"""Step 3: unify overlapping info types into canonical variables and rewrite the questions onto them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...data import UserProfile
from .base import GenContext, StepFailure, ask_json, gather_in_order
from .formats import arr, bullet_schema, obj, snake, string
from .records import DraftQuestion, FinalQuestion, QuestionsOut, SchemaOut


@dataclass(frozen=True)
class _Use:
    """One place an info type is used: the question and the values it had there."""

    question: int
    info_type: str
    choices: tuple[str, ...]


def info_type_uses(questions: list[DraftQuestion]) -> dict[str, list[_Use]]:
    """Every distinct info type name, in order of first use, with all its uses."""
    uses: dict[str, list[_Use]] = {}
    for qi, q in enumerate(questions):
        for t in q.required_info:
            uses.setdefault(t.name, []).append(_Use(qi, t.name, tuple(t.choices)))
    return uses


def _describe_types(questions: list[DraftQuestion], uses: dict[str, list[_Use]]) -> str:
    lines = []
    for name, us in uses.items():
        where = "; ".join(f"question {u.question + 1} with values {', '.join(u.choices)}" for u in us)
        lines.append(f"- {name}: {where}")
    qs = "\n".join(f"{i}. {q.question}" for i, q in enumerate(questions, start=1))
    return f"Questions:\n{qs}\n\nInfo types:\n" + "\n".join(lines)


def check_groups(value: dict[str, Any], types: list[str], min_variables: int) -> str | None:
    """Every info type in exactly one group; variable names snake_case and distinct."""
    groups = value["variables"]
    names = [snake(g["name"]) for g in groups]
    if any(not n for n in names):
        return "every variable needs a name"
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        return f"the variable name {dup!r} is used twice; merge those groups or rename one"
    seen: dict[str, str] = {}
    for g, name in zip(groups, names, strict=True):
        for t in g["info_types"]:
            if t not in types:
                return f"variable {name!r} lists {t!r}, which is not one of the info types"
            if t in seen:
                return f"info type {t!r} is in two variables ({seen[t]!r} and {name!r}); put it in exactly one"
            seen[t] = name
    missing = [t for t in types if t not in seen]
    if missing:
        return f"these info types are not in any variable: {', '.join(missing)}"
    if len(groups) < min_variables:
        return f"keep at least {min_variables} variables; only merge info types that mean the same thing"
    return None


def check_values(value: dict[str, Any], n: int) -> str | None:
    """``n`` distinct, non-empty values."""
    vals = [snake(v) for v in value["values"]]
    if len(vals) != n or any(not v for v in vals) or len(set(vals)) != len(vals):
        return f"give exactly {n} distinct, non-empty values"
    return None


def ungrouped(types: list[str]) -> list[dict[str, Any]]:
    """One variable per info type, with unique snake_case names."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in types:
        name = snake(t) or "variable"
        base, k = name, 2
        while name in seen:
            name, k = f"{base}_{k}", k + 1
        seen.add(name)
        out.append({"name": name, "info_types": [t]})
    return out


async def _unified_values(
    ctx: GenContext, name: str, uses: list[_Use], questions: list[DraftQuestion], profile: UserProfile
) -> list[str]:
    n = ctx.cfg.num_choices_per_state
    sources = "\n".join(
        f"- question {u.question + 1} ({questions[u.question].question}) used {u.info_type!r} with values "
        f"{', '.join(u.choices)}"
        for u in uses
    )
    try:
        value = await ask_json(
            ctx, "schema.values", "gen_schema_values", obj(values=arr(string(), n, n)),
            lambda v: check_values(v, n), max_tokens=40 + 16 * n, key=(name,),
            profile=profile.formatted_str, variable=name, sources=sources, num_choices=n,
        )
    except StepFailure:
        # The first question's values are a valid list (checked at the questions step); the other questions
        # of the group are then rewritten onto it like any question whose values changed.
        ctx.step("schema.values_fallback").add_unit("first_try")
        return list(uses[0].choices)
    return [snake(v) for v in value["values"]]


async def _rewrite(
    ctx: GenContext, qi: int, q: DraftQuestion, mapped: list[str], schema: dict[str, list[str]]
) -> FinalQuestion:
    n_s = ctx.cfg.num_states_per_question
    k = n_s - len(mapped)
    others = [v for v in schema if v not in mapped]
    added = arr(string(others) if k and others else string(), k, k)

    def check(v: dict[str, Any]) -> str | None:
        extra = v["added_variables"]
        if len(set(extra)) != len(extra):
            return "added_variables lists a variable twice"
        return None

    original = "\n".join(f"- {t.name}: {', '.join(t.choices)}" for t in q.required_info)
    try:
        value = await ask_json(
            ctx, "schema.rewrite", "gen_rewrite_question", obj(question=string(), added_variables=added), check,
            max_tokens=120 + 16 * k, key=(qi,), question=q.question, original_info=original,
            variables=bullet_schema(schema, mapped), other_variables=bullet_schema(schema, others) or "(none)",
            num_states=n_s, num_added=k,
        )
    except StepFailure:
        if k > len(others):
            raise
        # Keep the question as written and add seeded variables: valid, if less fitting than a rewrite.
        ctx.step("schema.rewrite_fallback").add_unit("first_try")
        return FinalQuestion(query=q.question, required_info=mapped + ctx.rng("schema.rewrite", qi).sample(others, k))
    return FinalQuestion(query=value["question"].strip(), required_info=mapped + list(value["added_variables"]))


async def run_schema(ctx: GenContext, profile: UserProfile, drafts: QuestionsOut) -> SchemaOut:
    """Group info types into variables, unify merged value lists, and rewrite the affected questions."""
    questions = drafts.questions
    uses = info_type_uses(questions)
    types = list(uses)
    n_s = ctx.cfg.num_states_per_question
    group_schema = obj(variables=arr(obj(name=string(), info_types=arr(string(types), 1)), 1, len(types)))
    try:
        value = await ask_json(
            ctx, "schema.group", "gen_schema_group", group_schema, lambda v: check_groups(v, types, n_s),
            max_tokens=60 + 30 * len(types), profile=profile.formatted_str,
            info_types=_describe_types(questions, uses),
        )
    except StepFailure:
        # Grouping only merges overlapping info types; when the model cannot do it, every type becomes its
        # own variable. That may keep two near-duplicate variables, so it is counted as a step of its own
        # and shows in the report; the later steps validate the result as usual.
        ctx.step("schema.group_fallback").add_unit("first_try")
        value = {"variables": ungrouped(types)}
    mapping: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for g in value["variables"]:
        name = snake(g["name"])
        members[name] = list(g["info_types"])
        for t in g["info_types"]:
            mapping[t] = name

    async def values_of(name: str) -> list[str]:
        group_uses = [u for t in members[name] for u in uses[t]]
        distinct = {u.choices for u in group_uses}
        if len(distinct) == 1:
            return list(group_uses[0].choices)
        return await _unified_values(ctx, name, group_uses, questions, profile)

    results = await gather_in_order(values_of(n) for n in members)
    schema = dict(zip(members, results, strict=True))

    async def final(qi: int, q: DraftQuestion) -> FinalQuestion:
        mapped = list(dict.fromkeys(mapping[t.name] for t in q.required_info))
        unchanged = len(mapped) == n_s and all(
            list(t.choices) == schema[mapping[t.name]] for t in q.required_info
        )
        if unchanged:
            return FinalQuestion(query=q.question, required_info=mapped)
        return await _rewrite(ctx, qi, q, mapped, schema)

    finals = await gather_in_order(final(i, q) for i, q in enumerate(questions))
    return SchemaOut(state_schema=schema, mapping=mapping, questions=finals)

