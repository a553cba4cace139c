"""``users/<id>/eval/period_XX.json`` and ``users/<id>/upper_bound.json``: what was asked and scored."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from .base import RunFile


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class QuestionResult(_Part):
    """One question of a period's evaluation: the overall answer, its score, and the state probe."""

    question: int = Field(ge=0)
    prompt: str
    reply: str
    choice: int | None
    status: str
    gold: int
    n_choices: int = Field(ge=1)
    score: float = Field(ge=0.0, le=1.0)
    # The original release's scoring rule; runs from before its rename wrote score_with_random_fallback.
    score_original_rule: float | None = Field(default=None, ge=0.0, le=1.0)
    score_with_random_fallback: float | None = Field(default=None, ge=0.0, le=1.0)
    ub_score: float | None = None
    ub_score_original_rule: float | None = None
    probe_prompt: str | None = None
    probe_reply: str | None = None
    probe_values: dict[str, str | None] = Field(default_factory=dict)
    probe_correct: dict[str, bool]


class EvaluationRecord(RunFile):
    """One user's evaluation at one period, made on a fresh agent restored from that period's snapshot."""

    kind: ClassVar[str] = "evaluation"

    user: str
    period: int = Field(ge=0)
    questions: list[QuestionResult]
    memory: Any = None
    agent_stats: dict[str, Any] = Field(default_factory=dict)


class UpperBoundAnswer(_Part):
    """The bare model's answer to one (question, state combination) when told the state."""

    question: int = Field(ge=0)
    state: list[str]
    prompt: str
    reply: str
    choice: int | None
    status: str
    score: float = Field(ge=0.0, le=1.0)
    score_original_rule: float | None = Field(default=None, ge=0.0, le=1.0)


class UpperBoundRecord(RunFile):
    """Upper-bound answers keyed by ``"<question>|<value>|..."``."""

    kind: ClassVar[str] = "upper bound"

    answers: dict[str, UpperBoundAnswer]

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Format 1 was the bare key -> answer mapping."""
        return {"answers": raw}
