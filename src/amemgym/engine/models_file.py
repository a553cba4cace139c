"""A models file: which endpoint serves each role, as YAML.

Example::

    agent:
      base_url: http://gpu-node-1:8000/v1
      model: Qwen/Qwen2.5-7B-Instruct
      api_key_env: VLLM_API_KEY
      max_concurrency: 64
    simulator:
      base_url: https://api.openai.com/v1
      model: gpt-4.1-mini
      max_concurrency: 16

Every role entry takes the fields of :class:`~amemgym.config.EndpointConfig`; keys are read from the
environment variable named by ``api_key_env`` (or a file named by ``api_key_file``), never from this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import ValidationError

from ..config import EndpointConfig, Role
from ..errors import ConfigError

ROLES: tuple[str, ...] = get_args(Role)
_SECRET_KEYS = {"api_key", "key", "token", "secret"}


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "entry"
    return f"{where}: {first['msg']}"


def load_models_file(path: Path | str) -> dict[str, dict[str, Any]]:
    """Read a models file into ``llm.roles`` overrides (role -> endpoint fields), each validated.

    Raises:
        ConfigError: the file is missing or unreadable, is not a mapping of known roles, holds a key
            literally, or an entry is not a valid endpoint.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read models file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{line}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a mapping of role -> endpoint settings (roles: {', '.join(ROLES)})")
    out: dict[str, dict[str, Any]] = {}
    for role, entry in data.items():
        if role not in ROLES:
            raise ConfigError(f"{path}: unknown role {role!r}; known: {', '.join(ROLES)}")
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {role}: expected a mapping of endpoint settings")
        secret = _SECRET_KEYS & set(entry)
        if secret:
            raise ConfigError(f"{path}: {role}: do not put keys in the file ({', '.join(sorted(secret))}); "
                              "name an environment variable with api_key_env instead")
        try:
            EndpointConfig(**entry)
        except ValidationError as exc:
            raise ConfigError(f"{path}: {role}: {_problem(exc)}") from None
        out[str(role)] = dict(entry)
    return out


def apply_models_file(roles: dict[str, dict[str, Any]], path: Path | str) -> dict[str, dict[str, Any]]:
    """``roles`` with the models file's entries laid over them, field by field."""
    merged = {role: dict(over) for role, over in roles.items()}
    for role, entry in load_models_file(path).items():
        merged[role] = {**merged.get(role, {}), **entry}
    return merged
