"""``manifest.json``: the protocol a run is pinned to."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from .base import RunFile


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
