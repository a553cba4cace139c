"""``users/<id>/sessions.jsonl``: one record per finished session (append-only)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from .base import RunFile


class Message(BaseModel):
    """One chat message of a session."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    role: str
    content: str


class SessionRecord(RunFile):
    """A finished session: its position, time and messages, plus simulator-guard counts when it fired.

    Attributes:
        models: per run role, the model that produced the session (absent in runs from before it was recorded).
        state_sha256: the digest of the agent snapshot in the checkpoint saved right after the session, which a
            resume checks that checkpoint against (absent in runs from before it was recorded).
    """

    kind: ClassVar[str] = "session"

    period: int = Field(ge=0)
    session: int = Field(ge=0)
    time: str | None = None
    messages: list[Message]
    resimulated: int = 0
    unresolved_leaks: int = 0
    echo_redraws: int = 0
    models: dict[str, Any] | None = None
    state_sha256: str | None = None
