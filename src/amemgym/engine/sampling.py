"""What a run's models are asked with: per role the temperature and the default token cap, checked on resume.

A reply depends on them as much as on the model, so a run resumed with other values would score some units
under one setting and the rest under another. The earlier invocation's values come from the ``config`` its
manifest records; a manifest whose config this version cannot read has nothing to compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..config import ROLE_TEMPERATURE, LLMConfig
from ..errors import RunError

__all__ = ["check_sampling", "sampling_of"]

#: Roles whose calls are embeddings: nothing is sampled.
_NOT_SAMPLED = frozenset({"embedder"})


def sampling_of(llm: LLMConfig, roles: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per chat role of ``roles``, the temperature its calls use when they pass none, and its token cap."""
    out: dict[str, dict[str, Any]] = {}
    for role in roles:
        if role in _NOT_SAMPLED:
            continue
        ep = llm.endpoint(role)  # type: ignore[arg-type]
        temperature = ep.temperature if ep.temperature is not None else ROLE_TEMPERATURE.get(role, 0.0)
        out[role] = {"temperature": temperature, "max_tokens": ep.max_tokens}
    return out


def _recorded(old: Mapping[str, Any], roles: Sequence[str]) -> dict[str, dict[str, Any]] | None:
    config = old.get("config")
    llm = config.get("llm") if isinstance(config, Mapping) else None
    if not isinstance(llm, Mapping):
        return None
    try:
        return sampling_of(LLMConfig.model_validate(llm), roles)
    except (ValidationError, ValueError, TypeError):
        return None


def check_sampling(root: Path, old: Mapping[str, Any] | None, llm: LLMConfig, roles: Sequence[str]) -> None:
    """Refuse to resume the run ``old`` (its manifest; None for a new run) with other sampling settings.

    Raises:
        RunError: a role of ``roles`` would be sampled with another temperature or token cap than the
            manifest's config gives it (naming the role, the setting and both values).
    """
    before = _recorded(old, roles) if old is not None else None
    if before is None:
        return
    for role, now in sampling_of(llm, roles).items():
        was = before.get(role)
        if was is None or was == now:
            continue
        setting = next(k for k in now if was.get(k) != now[k])
        raise RunError(f"{root}: holds a run whose {role} calls used {setting} {was.get(setting)!r}, now "
                       f"{now[setting]!r}; refusing to mix results (a reply depends on it: use a new --out "
                       "directory, or the settings the run started with)")
