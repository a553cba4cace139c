"""The model flags ``run`` and ``evolve`` share with other eval tools: which model plays which role.

``--model`` is the assistant under test (the ``agent`` role; its memory writes follow it unless the
``memory`` role is configured apart), ``--user-model`` the simulated user (``simulator``),
``--judge-model`` the ``judge`` role (refused by a command that will call no judge), and
``--max-connections`` caps calls in flight per endpoint for every role. The embedder is not touched: it
stays the local MiniLM unless the ``embedder`` role has an endpoint. Flags override config files,
presets, ``--set`` and an agent file's own ``llm`` section.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config import AppConfig
from ..errors import ConfigError

__all__ = ["ModelFlags"]


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

    def refuse_unused_user_model(self, roles: Iterable[str], command: str, why: str) -> None:
        """Refuse ``--user-model`` when ``roles`` (what ``command`` will call) has no simulated user, for the
        reason :meth:`refuse_unused_judge` gives.

        Raises:
            ConfigError: ``--user-model`` was given and ``simulator`` is not among ``roles``.
        """
        if self.user_model is not None and "simulator" not in roles:
            raise ConfigError(f"--user-model: {command} calls no simulated user ({why}); leave the flag out")
