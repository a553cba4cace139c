"""Typed records for the environment file (docs/design.md §2).

The file is a JSON list with one item per user, exactly as in the original AMemGym release, so the
published v1 environments load unchanged and files we write load in the original tools. Fields we add
are optional; amemgym's own metadata lives under the per-user key ``_amemgym`` (original tools ignore
unknown keys).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from ....config import MAX_ROUNDS_PER_SESSION

#: The ``_amemgym.format_version`` this amemgym writes; a file naming a later one is refused on load.
FORMAT_VERSION = 1

_TIME_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")


def parse_time(text: str) -> datetime:
    """Parse a date or date-time as the environment files write them.

    Raises:
        ValueError: if ``text`` matches none of the accepted formats.
    """
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ValueError(f"not a date or date-time (expected YYYY-MM-DD[ HH:MM[:SS]]): {text!r}")


class _Record(BaseModel):
    # Unknown keys are kept so that a file from a newer tool survives a load/save round trip.
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class UserProfile(_Record):
    """Who the simulated user is. ``formatted_str`` is the profile as ``key: value`` lines."""

    uuid: str | None = None
    name: str
    age: int | None = None
    gender: str | None = None
    marital_status: str | None = None
    education_level: str | None = None
    occupation: str | None = None
    hobbies_and_interests: str | None = None
    skills_and_expertise: str | None = None
    complementary_info: str | None = Field(default=None, description="Concise role-play summary.")
    formatted_str: str


class StateUpdate(_Record):
    """One variable's change in a period (``old`` is null in period 0)."""

    old: str | None
    new: str


class Message(_Record):
    """One chat message of a recorded session."""

    role: Literal["user", "assistant"]
    content: str


class Session(_Record):
    """One conversation, opened by the user's ``query`` at ``session_time``."""

    event: str | None = None
    exposed_states: dict[str, str]
    query: str
    session_time: str
    messages: list[Message] = Field(default_factory=list)


class Period(_Record):
    """A span of simulated time; ``state`` holds every variable's value at its end."""

    period_start: str | None = None
    period_end: str
    period_summary: str | None = None
    state: dict[str, str]
    updates: dict[str, StateUpdate]
    update_cnts: dict[str, int] = Field(default_factory=dict)
    sessions: list[Session]

    @property
    def changes(self) -> dict[str, StateUpdate]:
        """The updates that change their variable: an entry whose ``old`` equals its ``new`` (which a file may
        hold; the loader keeps it, as the file says it) changes nothing, so it is no change for when a variable
        last changed, nor one its openings must state."""
        return {var: upd for var, upd in self.updates.items() if upd.old != upd.new}


class AnswerChoice(_Record):
    """One option of a question: the value combination it fits and its advice text."""

    state: list[str]
    answer: str
    type: Literal["experience", "random"]


class QA(_Record):
    """A question whose best answer depends on the ``required_info`` variables."""

    query: str
    required_info: list[str]
    answer_choices: list[AnswerChoice]


class Protocol(_Record):
    """amemgym's metadata for one user item (absent in the original release's files)."""

    format_version: int = FORMAT_VERSION
    num_rounds_init: int | None = None
    num_rounds_update: int | None = None
    generator: str | None = None
    seed: int | None = None
    config_name: str | None = None
    packs: dict[str, str] | None = None  # procedural: sha256 of each content-pack file the user was drawn from

    @field_validator("format_version", mode="before")
    @classmethod
    def _known_version(cls, value: object) -> object:
        """A whole number from 1 up to :data:`FORMAT_VERSION`: a later one means fields this amemgym cannot read."""
        if type(value) is not int or value < 1:
            raise PydanticCustomError("format_version", "must be a whole number from 1, got {got}",
                                      {"got": _shown(value)})
        if value > FORMAT_VERSION:
            raise PydanticCustomError(
                "format_version", "{got}: written by a newer amemgym (this one reads up to format_version {known}); "
                "upgrade amemgym to load this file", {"got": _shown(value), "known": FORMAT_VERSION})
        return value

    @field_validator("num_rounds_init", "num_rounds_update", mode="before")
    @classmethod
    def _sane_rounds(cls, value: object) -> object:
        """Rounds per session: a JSON whole number (not a bool, float or string) from 1 to the config's cap."""
        if value is None:
            return value
        if type(value) is not int or not 1 <= value <= MAX_ROUNDS_PER_SESSION:
            raise PydanticCustomError("rounds", "rounds per session must be a whole number from 1 to {cap}, got {got}",
                                      {"cap": MAX_ROUNDS_PER_SESSION, "got": _shown(value)})
        return value


def _shown(value: object) -> str:
    """``value`` as an error line shows it: a huge number by its digit count, anything long cut short."""
    if type(value) is int and abs(value) >= 10**18:
        return f"a number of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class UserEnv(_Record):
    """Everything about one simulated user: profile, state schema, timeline and questions."""

    id: str
    start_time: str
    user_profile: UserProfile
    state_schema: dict[str, list[str]]
    periods: list[Period]
    qas: list[QA] = Field(min_length=1, description="At least one: a user without questions cannot be scored.")
    amemgym: Protocol | None = Field(default=None, alias="_amemgym")

    def correct_choice(self, qa_index: int, period_index: int) -> int:
        """The index of the one choice of question ``qa_index`` matching the state at ``period_index``."""
        qa = self.qas[qa_index]
        state = self.periods[period_index].state
        gold = [state[v] for v in qa.required_info]
        for i, choice in enumerate(qa.answer_choices):
            if choice.state == gold:
                return i
        raise ValueError(f"user {self.id}: question {qa_index} has no choice for period {period_index}")


class Environment(BaseModel):
    """A whole environment file: many users."""

    model_config = ConfigDict(frozen=False)

    users: list[UserEnv]

    @property
    def num_periods(self) -> int:
        """Periods per user (all users agree; checked on load)."""
        return len(self.users[0].periods) if self.users else 0
