"""``users/<id>/evolution/period_XX.json``: one self-evolution cycle (written by ``amemgym evolve``)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from .base import RunFile


class EvolutionCycle(RunFile):
    """The policy before and after one period's cycle, with the feedback, proposal and decision.

    Resume reads ``next_policy`` (re-applied to the live agent) and ``next_policy_version``.
    """

    kind: ClassVar[str] = "evolution cycle"

    user: str
    period: int = Field(ge=0)
    policy_version: int = Field(ge=0)
    policy: str
    status: str
    accepted: bool
    next_policy_version: int = Field(ge=0)
    next_policy: str
    feedback: Any = None
    proposal: Any = None
