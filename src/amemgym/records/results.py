"""``metrics.json``, ``usage.json``, ``usage.pending.json`` and ``failures.json``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from .base import RunFile


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class Stat(_Part):
    """A mean with its 95 % interval over users (None where undefined, never NaN or infinite)."""

    mean: float | None = Field(allow_inf_nan=False)
    lo: float | None = Field(default=None, allow_inf_nan=False)
    hi: float | None = Field(default=None, allow_inf_nan=False)


class Overall(_Part):
    """The headline numbers of a run."""

    overall: Stat
    upper_bound: Stat
    random: Stat
    memory_score: Stat
    failure_rates: dict[str, float | None]


class Failure(_Part):
    """A user/period whose work failed in the last invocation."""

    user: str
    period: int | None = None
    stage: str
    error: str


class Metrics(RunFile):
    """Every number of a run (see ``amemgym.families.statetrack.metrics.aggregate`` for the full layout)."""

    kind: ClassVar[str] = "metrics"

    overall: Overall
    per_period: list[dict[str, Any]] = Field(default_factory=list)
    per_user: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    #: A JSON boolean only: ``"yes"`` or ``1`` is refused, not read as true.
    complete: bool = Field(strict=True)
    missing: list[dict[str, Any]] = Field(default_factory=list)
    agent: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)


class UsageFile(RunFile):
    """Usage summed over a run's invocations, plus the last one's (per role, with a ``total`` entry)."""

    kind: ClassVar[str] = "usage"

    cumulative: dict[str, dict[str, Any]]
    last_invocation: dict[str, dict[str, Any]] = Field(default_factory=dict)
    invocation: str | None = None
    #: The invocation under way (written when it begins, dropped when it ends): set at the start of another
    #: means that one was killed.
    running: str | None = None
    #: Why the count is known to miss earlier calls (a usage file deleted); the count is then a lower bound.
    incomplete: str | None = None


class PendingUsage(RunFile):
    """The running invocation's usage so far, flushed every few seconds."""

    kind: ClassVar[str] = "pending usage"

    invocation: str
    usage: dict[str, dict[str, Any]]


class FailuresFile(RunFile):
    """The failures of the last invocation."""

    kind: ClassVar[str] = "failures"

    failures: list[Failure]

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Format 1 was the bare list."""
        return {"failures": raw}
