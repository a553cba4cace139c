"""The cheap lexical leak check of a simulator turn, shared by the simulator and the simulator audit.

A simulated user must not tell the agent more about the tracked variables than the session's validated
opening did (docs/design.md §4). The check looks for schema values by name, so it is fast and pure; it misses
paraphrases, which only the audit's LLM judge can see.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache


@lru_cache(maxsize=4096)
def value_pattern(value: str) -> re.Pattern[str]:
    """Matches a schema value as written (``hot_plate_only``) or as words (``hot plate only``, ``hot-plate``)."""
    parts = [re.escape(p) for p in re.split(r"[_\s-]+", value.strip()) if p]
    return re.compile(r"(?<![A-Za-z0-9])" + r"[\s_-]+".join(parts) + r"(?![A-Za-z0-9])", re.IGNORECASE)


def distinctive(value: str) -> bool:
    """Whether a value is specific enough to look for in free text.

    A short one-word value ("low", "none") occurs in ordinary talk, so looking for it would mostly raise
    false alarms.
    """
    stripped = value.strip()
    return bool(re.search(r"[_\s-]", stripped)) or len(stripped) >= 5


def leaked_values(
    text: str, schema: Mapping[str, Sequence[str]], exposed: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The ``(variable, value)`` pairs named in ``text`` beyond what the opening exposed.

    Args:
        text: one user turn.
        schema: the user's state schema, ``{variable: [value, ...]}``.
        exposed: the session's ``exposed_states``; repeating one of these is not a leak.
    """
    return [(var, val) for var, values in schema.items() for val in values
            if exposed.get(var) != val and distinctive(val) and value_pattern(val).search(text)]
