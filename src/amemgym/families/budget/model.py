"""The budget family's data file: a typed, versioned record of one episode (world, stream, questions)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .tiers import Tier

FORMAT_VERSION: Literal[1] = 1
FAMILY: Literal["budget"] = "budget"

Value = int | float | str | list[float] | list[str]
EventKind = Literal["documents", "memo", "correction", "contradiction", "question"]
AnswerType = Literal["int", "float", "name", "text", "date", "refuse"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntityRecord(_Frozen):
    """An entity as first documented (values before any correction)."""

    name: str
    category: str
    attrs: dict[str, Value]
    relations: dict[str, list[str]]


class Change(_Frozen):
    """A value that changes after its document: announced (``notice``) or silent (``silent``)."""

    entity: str
    attr: str
    old: int | float
    new: int | float
    kind: Literal["notice", "silent"]


class Fact(_Frozen):
    """One value stated in an event; ``distractor`` is the wrong number printed next to it, if any."""

    entity: str
    attr: str
    value: Value
    distractor: int | float | None = None


class Event(_Frozen):
    """One step of the stream. Documents carry their facts; a correction or contradiction its change."""

    index: int
    session: int
    kind: EventKind
    text: str
    facts: list[Fact] = Field(default_factory=list)
    change: int | None = None
    question: str | None = None


class QuestionSpec(_Frozen):
    """What a question is about, in structured form (scripted strategies and tests use it)."""

    entities: list[str] = Field(default_factory=list)
    attrs: list[str] = Field(default_factory=list)
    relations: list[str] = Field(default_factory=list)
    category: str | None = None
    value: str | None = None
    threshold: float | None = None
    #: The second attribute's threshold (multi-constraint counts).
    threshold2: float | None = None


class Question(_Frozen):
    """A question, its competency kind, and the gold answer computed from the final world."""

    id: str
    kind: str
    text: str
    answer_type: AnswerType
    gold: int | float | str | None
    spec: QuestionSpec
    needs: list[tuple[str, str]]
    candidates: list[str] = Field(default_factory=list)


class DomainPack(_Frozen):
    """A domain from outside the built-in pack (a ``--pack`` file or an installed pack), carried in the episode
    file so that the file regenerates, and so plays, anywhere: the domain's template as checked at generation,
    and the text pools its attributes draw from. A built-in domain is never carried (its name is enough).
    """

    template: dict[str, Any]
    pools: dict[str, list[str]]


class Episode(_Frozen):
    """One budget-family episode; the whole ``data.json``."""

    family: Literal["budget"] = FAMILY
    format_version: Literal[1] = FORMAT_VERSION
    domain: str
    seed: int
    salt: int
    tier: Tier
    note_chars: int
    entity_names: list[str]
    absent_names: list[str]
    entities: list[EntityRecord]
    changes: list[Change]
    events: list[Event]
    questions: list[Question]
    reference_writes: int
    #: Only for a domain from a pack outside the built-in one (absent from the file otherwise).
    domain_pack: DomainPack | None = Field(default=None, exclude_if=lambda v: v is None)

    def question(self, qid: str) -> Question:
        """The question with id ``qid``."""
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)
