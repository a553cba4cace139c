"""JSON-schema builders with a matching validator, and the text formats the prompts share."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from .....textsim import plain


# ---- JSON schema builders and validator ---------------------------------------------------------------
def obj(**props: dict[str, Any]) -> dict[str, Any]:
    """An object schema in which every property is required and no other is allowed."""
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def arr(items: dict[str, Any], lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    """An array schema with optional item-count bounds."""
    out: dict[str, Any] = {"type": "array", "items": items}
    if lo is not None:
        out["minItems"] = lo
    if hi is not None:
        out["maxItems"] = hi
    return out


def string(enum: list[str] | None = None) -> dict[str, Any]:
    """A non-empty string schema, optionally restricted to ``enum``.

    ``minLength`` lets a grammar-constrained server rule out the empty strings small models like to emit.
    """
    return {"type": "string", "enum": list(enum)} if enum is not None else {"type": "string", "minLength": 1}


def integer(enum: list[int]) -> dict[str, Any]:
    """An integer schema restricted to ``enum``."""
    return {"type": "integer", "enum": list(enum)}


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
}


def schema_problem(value: Any, schema: dict[str, Any], path: str = "reply") -> str | None:
    """The first way ``value`` breaks ``schema`` (the subset the builders above produce), or None.

    Servers that ignore constrained decoding still get their replies checked this way.
    """
    if "anyOf" in schema:
        problems = [schema_problem(value, s, path) for s in schema["anyOf"]]
        if any(p is None for p in problems):
            return None
        # Report against the branch the value came closest to (most properties valid), not the first one.
        scores = [_valid_properties(value, s) for s in schema["anyOf"]]
        best = max(range(len(scores)), key=lambda i: scores[i])
        return problems[best] if scores[best] else f"{path} matches none of the allowed forms"
    kind = schema.get("type")
    if kind and not _TYPES[kind](value):
        return f"{path} must be a JSON {kind}"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(map(str, schema["enum"][:12]))
        return f"{path} is {value!r}, which is not allowed (allowed: {allowed})"
    if kind == "string" and not value.strip():
        return f"{path} is empty"
    if kind == "array":
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            lo, hi = schema.get("minItems", 0), schema.get("maxItems", "any")
            return f"{path} has {len(value)} items, expected between {lo} and {hi}"
        for i, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{path}[{i}]")
            if problem:
                return problem
    if kind == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"{path} lacks the key {key!r}"
        extra = [k for k in value if k not in props]
        if extra and schema.get("additionalProperties") is False:
            return f"{path} has unexpected key(s) {', '.join(map(repr, extra))}"
        for key, sub in props.items():
            if key in value:
                problem = schema_problem(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
    return None


def _valid_properties(value: Any, schema: dict[str, Any]) -> int:
    if not isinstance(value, dict):
        return 0
    props = schema.get("properties", {})
    return sum(1 for k, sub in props.items() if k in value and schema_problem(value[k], sub) is None)


# ---- text helpers -------------------------------------------------------------------------------------
_NON_WORD = re.compile(r"[^a-z0-9]+")


def snake(text: str) -> str:
    """``text`` as a lower snake_case identifier (``"2-4 people"`` -> ``"2_4_people"``)."""
    return _NON_WORD.sub("_", text.lower()).strip("_")


def named_values(text: str, values: list[str]) -> list[str]:
    """The snake_case values (with an underscore) that ``text`` quotes verbatim."""
    low = text.lower()
    return [v for v in values if "_" in v and v.lower() in low]


def name_tokens(*names: str) -> int:
    """A generous completion budget for writing ``names`` as JSON keys or enum values.

    Fixed per-item budgets cut off long snake_case values (small models invent 20-word ones), and a reply
    cut off mid-value does not parse.
    """
    return sum(len(n) // 2 + 6 for n in names)


def longest(names: Iterable[str]) -> str:
    """The longest of ``names`` (the first among equals)."""
    return max(names, key=len)


def unquote(text: str, values: list[str]) -> str:
    """``text`` with every snake_case value of ``values`` it quotes put in plain words."""
    for name in named_values(text, values):
        text = re.sub(re.escape(name), plain(name), text, flags=re.IGNORECASE)
    return text


def plain_combination(variables: list[str], combo: list[str]) -> str:
    """One value combination in plain words: ``marital status: divorced; hobby: oud music``.

    Prompts to small models show names this way: shown an identifier, they copy it verbatim.
    """
    return "; ".join(f"{plain(var)}: {plain(val)}" for var, val in zip(variables, combo, strict=True))


def bullet_schema(schema: dict[str, list[str]], variables: list[str] | None = None) -> str:
    """Variables and their values as Markdown bullets."""
    names = variables if variables is not None else list(schema)
    return "\n".join(f"- {v}: {', '.join(schema[v])}" for v in names)


def bullet_state(state: dict[str, str], variables: list[str] | None = None) -> str:
    """A state as ``- variable = value`` bullets."""
    names = variables if variables is not None else list(state)
    return "\n".join(f"- {v} = {state[v]}" for v in names)


def combination_text(variables: list[str], combo: list[str]) -> str:
    """One value combination as ``var = value; var = value``."""
    return "; ".join(f"{var} = {val}" for var, val in zip(variables, combo, strict=True))


def numbered_combinations(variables: list[str], combos: list[list[str]]) -> str:
    """Value combinations as numbered lines ``k. var = value; var = value``."""
    return "\n".join(f"{k}. {combination_text(variables, c)}" for k, c in enumerate(combos, start=1))
