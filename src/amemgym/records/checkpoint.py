"""``users/<id>/state.jsonl`` (the resume checkpoint, a journal folded into :class:`State`; earlier versions
wrote it whole as ``state.json``) and ``users/<id>/snapshots/period_XX.json``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from .base import RunFile


class State(RunFile):
    """Where a user's episode resumes: the next (period, session) and the live agent's snapshot."""

    kind: ClassVar[str] = "checkpoint"

    period: int = Field(ge=0)
    session: int = Field(ge=0)
    snapshot: Any
    #: The period before ``period`` still owes its after-period hook (self-evolution's cycle): the episode is not
    #: finished until the hook has run, even past its last period (absent in earlier records: False).
    hook_pending: bool = False


class Snapshot(RunFile):
    """The agent snapshot evaluated for one period (the agent's own JSON, kept as it gave it)."""

    kind: ClassVar[str] = "snapshot"

    snapshot: Any

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Format 1 was the agent's snapshot itself."""
        return {"snapshot": raw}
