"""Typed outputs of the pipeline stages, as checkpointed under ``work/<user>/<stage>.json``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...data import QA, UserEnv, UserProfile


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InfoType(_Out):
    """A kind of information a question depends on, with its mutually exclusive values."""

    name: str
    choices: list[str]


class DraftQuestion(_Out):
    """A question as first written, before the schema is unified."""

    question: str
    required_info: list[InfoType]


class QuestionsOut(_Out):
    """Stage ``questions``."""

    questions: list[DraftQuestion]


class FinalQuestion(_Out):
    """A question over the final schema's variables."""

    query: str
    required_info: list[str]


class SchemaOut(_Out):
    """Stage ``schema``: the variables, which info type became which variable, the rewritten questions."""

    state_schema: dict[str, list[str]]
    mapping: dict[str, str]
    questions: list[FinalQuestion]


class InitialStateOut(_Out):
    """Stage ``initial_state``."""

    state: dict[str, str]


class Change(_Out):
    """One variable's change within a period."""

    old: str
    new: str


class Event(_Out):
    """A life event of a period and the variables whose change it explains."""

    event: str
    variables: list[str]


class EvolvedPeriod(_Out):
    """One period after period 0: dates, changes, events, and the state at its end."""

    period_start: str
    period_end: str
    summary: str
    changes: dict[str, Change]
    events: list[Event]
    state: dict[str, str]


class EvolutionOut(_Out):
    """Stage ``evolution``: periods 1..N_p."""

    periods: list[EvolvedPeriod]


class AnswersOut(_Out):
    """Stage ``answers``: the final questions with their answer choices.

    ``unverified`` names the choices kept although the reflection check never picked them (non-strict).
    """

    qas: list[QA]
    unverified: list[str] = []


class Utterance(_Out):
    """An opening utterance and the variable values it reveals."""

    query: str
    exposed_states: dict[str, str]


class UtterancesOut(_Out):
    """Stage ``utterances``: one list per period (period 0 first); later periods follow their events.

    ``unverified`` names the utterances kept although the exposure check never recovered them (non-strict).
    """

    periods: list[list[Utterance]]
    unverified: list[str] = []


class ProfileOut(_Out):
    """Stage ``profile``."""

    profile: UserProfile


class AssembleOut(_Out):
    """Stage ``assemble``: the finished user item."""

    user: UserEnv


#: The record type of each stage's checkpoint.
STAGE_RECORDS: dict[str, type[BaseModel]] = {
    "profile": ProfileOut,
    "questions": QuestionsOut,
    "schema": SchemaOut,
    "initial_state": InitialStateOut,
    "evolution": EvolutionOut,
    "answers": AnswersOut,
    "utterances": UtterancesOut,
    "assemble": AssembleOut,
}
