"""``manifest.json``: the protocol a run is pinned to."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from .base import RunFile


class EnvironmentCut(BaseModel):
    """How a ``--limit`` run cut its environment file: the whole file's sha256 and the users kept.

    ``protocol.environment_sha256`` is the hash of the cut (what the run played); a reader loads the file,
    checks it against ``file_sha256`` (or, when the file changed since, the cut against the protocol's hash)
    and cuts it the same way (``amemgym.families.statetrack.cut.first_users``).

    Attributes:
        file_sha256: sha256 of the whole environment file the run was given.
        limit: the run played the file's first ``limit`` users.
    """

    model_config = ConfigDict(extra="allow")

    file_sha256: str
    limit: int = Field(ge=1)


class Manifest(RunFile):
    """What a run is: environment, agent, settings, models and prompt hashes (no secrets).

    Attributes:
        amemgym_version: the package version that created the run.
        environment_file: the environment file as given, if any.
        users: user ids in environment order.
        periods: periods per user.
        protocol: what must match for a resume to continue the same run.
        config: the full configuration (secrets excluded).
        models: per role, the backend and model it resolved to.
        prompt_sha256: hash of every prompt template.
        environment_cut: for a ``--limit`` run, the whole file's hash and the limit (None: the whole file).
    """

    kind: ClassVar[str] = "manifest"

    amemgym_version: str
    python: str | None = None
    created: str | None = None
    environment_file: str | None = None
    users: list[str]
    periods: int = Field(ge=0)
    protocol: dict[str, Any]
    config: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, Any] = Field(default_factory=dict)
    prompt_sha256: dict[str, str] = Field(default_factory=dict)
    environment_cut: EnvironmentCut | None = None
