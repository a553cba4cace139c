"""Tiers: how many entities, questions, corrections, writes and sessions an episode has."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError


@dataclass(frozen=True)
class Tier:
    """Sizes of one tier. ``writes`` is the memory write budget; ``sessions`` > 1 cuts the stream."""

    name: str
    entities: int
    questions: int
    corrections: int
    writes: int
    sessions: int


TIERS: dict[str, Tier] = {t.name: t for t in (
    Tier("lite", 30, 10, 3, 15, 1),
    Tier("standard", 60, 20, 5, 30, 1),
    Tier("hard", 120, 40, 10, 30, 1),
    Tier("multi", 60, 20, 5, 30, 3),
)}
#: Entity documents per stream batch.
BATCH_SIZE = 10
#: Longest content (characters) one write or edit may leave in a note.
NOTE_CHARS = 800
#: Names of plausible entities that never appear, per episode (abstention questions use them).
ABSENT_NAMES = 6
#: Tool calls an agent may make per event before the harness moves on.
MAX_STEPS_PER_EVENT = 12
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
