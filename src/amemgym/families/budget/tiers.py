"""Tiers: how many entities, questions, corrections, writes and sessions an episode has."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...errors import ConfigError


class Tier(BaseModel):
    """Sizes of one tier. ``writes`` is the memory write budget; ``sessions`` > 1 cuts the stream.

    The same record is stored in every episode file, so an episode says which sizes it was built with.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    entities: int
    questions: int
    corrections: int
    writes: int
    sessions: int


TIERS: dict[str, Tier] = {t.name: t for t in (
    Tier(name="lite", entities=30, questions=10, corrections=3, writes=15, sessions=1),
    Tier(name="standard", entities=60, questions=20, corrections=5, writes=30, sessions=1),
    Tier(name="hard", entities=120, questions=40, corrections=10, writes=30, sessions=1),
    Tier(name="multi", entities=60, questions=20, corrections=5, writes=30, sessions=3),
)}
#: Entity documents per stream batch.
BATCH_SIZE = 10
#: Longest content (characters) one write or edit may leave in a note.
NOTE_CHARS = 800
#: Names of plausible entities that never appear, per episode (abstention questions use them).
ABSENT_NAMES = 6
#: Tool calls an agent may make per event before the harness moves on.
MAX_STEPS_PER_EVENT = 12
#: Tokens of one embedded-model slot in a budget run, unless the config says otherwise. An event's conversation
#: holds the system prompt, the event's text (up to about 19,000 characters for a batch of documents) and up to
#: MAX_STEPS_PER_EVENT replies with their feedback: the embedded default of 8,192 tokens overflowed on the 0.5B
#: model's cut-off 512-token replies (docs/budget.md, "On the embedded model").
EMBEDDED_CTX_PER_SLOT = 16384
#: Seeds of the official protocol (every domain at each).
OFFICIAL_SEEDS = tuple(range(10))


def get_tier(name: str) -> Tier:
    """The tier called ``name``.

    Raises:
        ConfigError: for an unknown tier.
    """
    try:
        return TIERS[name]
    except KeyError:
        raise ConfigError(f"unknown tier {name!r} (known: {', '.join(TIERS)})") from None
