"""What a resumed statetrack run must match to be the same run: the protocol a manifest records, and the check
that refuses a directory holding another environment, agent or setting (naming what differs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...agents.registry import AgentSpec
from ...config import AppConfig, RunSettings
from ...engine.ranking_flags import source_sessions_sha256
from ...errors import RunError
from .data.io import environment_sha256
from .data.model import Environment

__all__ = ["check_manifest", "environment_hash", "protocol_difference", "protocol_of"]


def environment_hash(env: Environment) -> str:
    """sha256 of the environment's canonical serialisation (independent of file formatting)."""
    return environment_sha256(env)


def protocol_of(env: Environment | str, spec: AgentSpec, cfg: AppConfig, off_policy: Path | None) -> dict[str, Any]:
    """What must match for a resumed run to be the same run (``env`` is the environment or its hash)."""
    return {
        "environment_sha256": env if isinstance(env, str) else environment_hash(env),
        "agent": {"name": spec.name, "options": spec.options},
        "rounds": {"init": cfg.env.num_rounds_init, "update": cfg.env.num_rounds_update},
        "run": cfg.run.model_dump(exclude={"serial", "user_concurrency", "workers"}),
        "off_policy": str(off_policy) if off_policy else None,
        # What was replayed, by content: runs replaying different conversations are never grouped together.
        **({"off_policy_sessions_sha256": source_sessions_sha256(off_policy)} if off_policy else {}),
    }


def check_manifest(old: dict[str, Any] | Any, protocol: dict[str, Any] | Any, rundir: Path) -> dict[str, Any]:
    """An earlier invocation's manifest ``old``, once every entry of ``protocol`` matches what it recorded.

    Raises:
        RunError: the directory holds a run of another environment, agent or protocol (naming what differs).
    """
    for key, value in protocol.items():
        before = old.get("protocol", {}).get(key)
        if key == "run" and isinstance(before, dict):
            # A setting added in a later version, left at its default, does not change the protocol.
            defaults = RunSettings().model_dump()
            before = {**{k: v for k, v in value.items() if k not in before and v == defaults.get(k)}, **before}
        if before != value:
            raise RunError(
                f"{rundir}: holds a run with a different {key.replace('_', ' ')}; "
                f"refusing to mix results ({protocol_difference(key, before, value)}; use a new --out directory)"
                + (_cut_note(old) if key == "environment_sha256" else "")
            )
    return dict(old)


def _cut_note(old: dict[str, Any] | Any) -> str:
    """Why a ``--limit`` run's directory takes no other ``--limit``: the users played are part of its identity."""
    cut = old.get("environment_cut")
    if not isinstance(cut, dict) or "limit" not in cut:
        return ""
    return (f"; the run played the first {cut['limit']} user(s) of its file, and a statetrack run's users are part "
            "of what it measured (its headline is their mean), so another --limit is another run")


def protocol_difference(key: str, before: Any, now: Any, most: int = 3,
                        sides: tuple[str, str] = ("in the directory", "now")) -> str:
    """Which settings of one protocol entry differ, as ``run.seed: 0 in the directory, 99 now`` (``sides`` names
    where each value comes from)."""
    was, is_ = sides

    def show(v: Any) -> str:
        text = repr(v) if not isinstance(v, str) or key != "environment_sha256" else v[:12]
        return text if len(text) <= 60 else text[:57] + "..."

    if isinstance(before, dict) and isinstance(now, dict):
        keys = [k for k in dict.fromkeys([*before, *now]) if before.get(k) != now.get(k)]
        parts = [f"{key}.{k}: {show(before.get(k))} {was}, {show(now.get(k))} {is_}" for k in keys[:most]]
        return "; ".join(parts) + (f"; and {len(keys) - most} more" if len(keys) > most else "")
    return f"{key}: {show(before)} {was}, {show(now)} {is_}"
