"""Load and save environment files with errors that name the file, the JSON path and the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import DataError
from ..storage import atomic_write_text
from .checks import check_environment
from .model import FORMAT_VERSION, Environment, Protocol, UserEnv

_USERS = TypeAdapter(list[UserEnv])


def format_loc(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic error location as a JSON path like ``[3].qas[2].answer_choices[1].state``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


def _describe(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    msg = str(err.get("msg", "invalid value"))
    return msg[0].lower() + msg[1:] if msg else msg


def _summarise(name: str, problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    return f"{name}: {problems[0]}{more}"


def parse_environment(raw: Any, name: str = "<data>") -> Environment:
    """Validate already-parsed JSON as an environment.

    Raises:
        DataError: naming ``name``, the JSON path and the problem.
    """
    if isinstance(raw, dict) and "users" in raw:
        raw = raw["users"]
    if not isinstance(raw, list):
        raise DataError(f"{name}: expected a JSON list of users, got {type(raw).__name__}")
    if not raw:
        raise DataError(f"{name}: the environment has no users")
    try:
        users = _USERS.validate_python(raw)
    except ValidationError as exc:
        problems = [f"{format_loc(tuple(e['loc']))}: {_describe(dict(e))}" for e in exc.errors()]
        raise DataError(_summarise(name, problems)) from None
    env = Environment(users=users)
    problems = check_environment(env)
    if problems:
        raise DataError(_summarise(name, problems))
    return env


def load_environment(path: str | Path) -> Environment:
    """Load and check an environment file (ours or the original release's ``data.json``).

    Raises:
        DataError: if the file is missing, not JSON, or fails a structural or semantic check.
    """
    p = Path(path)
    name = p.name
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{p}: no such environment file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: cannot read: {exc}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_environment(raw, name)


def dump_environment(env: Environment) -> str:
    """Serialise an environment exactly as :func:`save_environment` writes it."""
    data = [u.model_dump(mode="json", by_alias=True, exclude_none=False) for u in env.users]
    for item in data:
        if item.get("_amemgym") is None:
            item.pop("_amemgym", None)
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def save_environment(env: Environment, path: str | Path) -> None:
    """Atomically write ``env`` in the original list format (plus our optional ``_amemgym`` keys)."""
    atomic_write_text(Path(path), dump_environment(env))


def with_protocol(user: UserEnv, **fields: Any) -> UserEnv:
    """Return ``user`` with its ``_amemgym`` metadata updated by ``fields``."""
    base = user.amemgym.model_dump() if user.amemgym else {"format_version": FORMAT_VERSION}
    base.update(fields)
    return user.model_copy(update={"amemgym": Protocol(**base)})
