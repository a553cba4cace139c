"""The model flags ``run`` and ``evolve`` share with other eval tools: which model plays which role.

``--model`` is the assistant under test (the ``agent`` role; its memory writes follow it unless the
``memory`` role is configured apart), ``--user-model`` the simulated user (``simulator``),
``--judge-model`` the ``judge`` role (refused by a command that will call no judge), and
``--max-connections`` caps calls in flight per endpoint for every role. The embedder is not touched: it
stays the local MiniLM unless the ``embedder`` role has an endpoint. Flags override config files,
presets, ``--set`` and an agent file's own ``llm`` section.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AppConfig
from ..errors import ConfigError
from ..families.statetrack.data.io import environment_sha256
from ..families.statetrack.data.model import Environment

__all__ = ["ModelFlags", "cut_as_recorded", "environment_cut", "first_users"]


@dataclass(frozen=True)
class ModelFlags:
    """What the command line said about models; None leaves the configured value."""

    model: str | None = None
    user_model: str | None = None
    judge_model: str | None = None
    max_connections: int | None = None

    def apply(self, cfg: AppConfig) -> None:
        """Write the flags into ``cfg.llm`` (in place)."""
        roles: dict[str, dict[str, Any]] = {role: dict(over) for role, over in cfg.llm.roles.items()}
        for role, model in (("agent", self.model), ("simulator", self.user_model), ("judge", self.judge_model)):
            if model is not None:
                if not model.strip():
                    raise ConfigError(f"the model name for role {role} is empty")
                roles.setdefault(role, {})["model"] = model
        if self.max_connections is not None:
            if self.max_connections < 1:
                raise ConfigError(f"--max-connections must be at least 1, got {self.max_connections}")
            cfg.llm.default.max_concurrency = self.max_connections
            for over in roles.values():
                if "max_concurrency" in over:
                    over["max_concurrency"] = self.max_connections
        cfg.llm.roles = roles  # type: ignore[assignment]

    def refuse_unused_judge(self, roles: Iterable[str], command: str, why: str) -> None:
        """Refuse ``--judge-model`` when ``roles`` (what ``command`` will call) has no judge.

        Such a flag would be recorded in the manifest while changing nothing, which reads as if a judge had
        been used. ``why`` says, in a few words, why this invocation calls no judge.

        Raises:
            ConfigError: ``--judge-model`` was given and ``judge`` is not among ``roles``.
        """
        if self.judge_model is not None and "judge" not in roles:
            raise ConfigError(f"--judge-model: {command} calls no judge ({why}); leave the flag out")


def first_users(env: Environment, limit: int | None) -> Environment:
    """The environment cut to its first ``limit`` users (all of them when None).

    The cut environment has its own hash, so a resumed run cannot silently mix a limited and a full run.
    """
    if limit is None:
        return env
    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    return env.model_copy(update={"users": env.users[:limit]})


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def environment_cut(path: Path, limit: int | None) -> dict[str, Any] | None:
    """What a run's manifest records of its ``--limit`` cut of the file at ``path`` (None without a limit).

    The protocol's ``environment_sha256`` is the cut's hash; this keeps the file's own sha256 beside it, so a
    reader can recognise the file it was cut from without parsing all of it (``records.manifest.EnvironmentCut``).
    """
    if limit is None:
        return None
    return {"file_sha256": file_sha256(path), "limit": limit}


def cut_as_recorded(path: Path, run_sha256: str, cut: dict[str, Any] | None,
                    run_users: int) -> tuple[Environment | None, str]:
    """The environment at ``path`` cut as the run cut it, or None with why it is not the run's environment.

    A ``--limit`` run's file matches when its bytes are the recorded ``file_sha256`` (only its first
    ``limit`` users are read), or when its first ``limit`` users hash to the run's environment (the file was
    edited after the run, outside the cut). Any other run's file matches when it hashes to the run's
    environment; a run written before cuts were recorded may also have played the file's first ``run_users``
    users.

    Raises:
        DataError: the file does not load.
    """
    from ..families.statetrack.data.io import load_environment

    if cut:
        limit = int(cut["limit"])
        part = load_environment(path, limit=limit)
        if file_sha256(path) == cut.get("file_sha256") or environment_sha256(part) == run_sha256:
            return part, ""
        return None, f"different sha256, and its first {limit} users differ from the run's"
    whole = load_environment(path)
    if environment_sha256(whole) == run_sha256:
        return whole, ""
    if 0 < run_users < len(whole.users) and environment_sha256(first_users(whole, run_users)) == run_sha256:
        return first_users(whole, run_users), ""
    return None, "different sha256"
