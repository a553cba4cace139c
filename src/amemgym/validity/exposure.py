"""Exposure read from the text: does each period's opening text actually tell the agent what changed?

The environment's ``exposed_states`` is metadata written by the generator; an agent only ever sees the
opening utterances. A reader here gets the utterances and nothing else (never ``exposed_states``, the
events or the summaries) and says which (variable, value) facts they state. A change the reader cannot
find in any opening of its period is a change the agent is scored on without having been told.

- Procedural environments are read lexically: the content pack knows every phrasing of every value, and
  the composer inserts phrasings verbatim, so a phrasing found in the text states its value.
- Other environments need understanding; ``amemgym validate --judge`` asks an LLM (see ``judge_reader``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from ..data.model import Environment, UserEnv

#: Reads the openings of one period of one user and returns the (variable, value) facts they state.
Reader = Callable[[UserEnv, int], set[tuple[str, str]]]
AsyncReader = Callable[[UserEnv, int], Awaitable[set[tuple[str, str]]]]


@dataclass(frozen=True)
class TextExposureFinding:
    """A change the opening text of its period does not state, or states with another value."""

    check: str
    user: str
    period: int
    variable: str
    value: str
    detail: str


@dataclass
class TextExposure:
    """What the text reader found, per check, and how many changes it looked at."""

    reader: str
    changes: int
    findings: list[TextExposureFinding]

    def count(self, check: str) -> int:
        """Findings of one check."""
        return sum(1 for f in self.findings if f.check == check)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"reader": self.reader, "changes": self.changes,
                "counts": {c: self.count(c) for c in ("unrevealed_change", "text_contradicts_state")},
                "findings": [asdict(f) for f in self.findings]}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


@cache
def _phrasing_index() -> tuple[tuple[str, str, str], ...]:
    from ..generate.procedural.packs import all_domains

    # Longest phrasings first, so a phrasing that contains a shorter one is matched as itself.
    rows = {(_squash(t), var.name, val.name) for d in all_domains() for var in d.variables for val in var.values
            for t in val.phrasings}
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def is_procedural(env: Environment) -> bool:
    """Every user was written by the procedural generator (so the pack's phrasings can read it)."""
    return bool(env.users) and all(u.amemgym is not None and u.amemgym.generator == "procedural" for u in env.users)


def lexical_reader(user: UserEnv, period: int) -> set[tuple[str, str]]:
    """The facts the pack's phrasings find in the period's opening utterances (text only)."""
    found: set[tuple[str, str]] = set()
    for session in user.periods[period].sessions:
        text = _squash(session.query)
        for phrasing, var, val in _phrasing_index():
            if phrasing in text:
                found.add((var, val))
    return found


def check_changes(user: UserEnv, period: int, stated: set[tuple[str, str]]) -> list[TextExposureFinding]:
    """Compare what the reader found in one period's text with that period's changes and state."""
    out: list[TextExposureFinding] = []
    state = user.periods[period].state
    for var, update in user.periods[period].updates.items():
        if (var, update.new) not in stated:
            out.append(TextExposureFinding("unrevealed_change", user.id, period, var, update.new,
                                           f"{var}: {update.old} -> {update.new} is not stated by any opening of "
                                           "the period"))
    for var, value in sorted(stated):
        if var in state and state[var] != value:
            out.append(TextExposureFinding("text_contradicts_state", user.id, period, var, value,
                                           f"an opening states {var}={value}, the state has {state[var]}"))
    return out


def read_exposure(env: Environment, reader: Reader, name: str) -> TextExposure:
    """Run ``reader`` over every period of every user."""
    findings: list[TextExposureFinding] = []
    changes = 0
    for user in env.users:
        for p, period in enumerate(user.periods):
            changes += len(period.updates)
            findings += check_changes(user, p, reader(user, p))
    return TextExposure(name, changes, findings)


async def read_exposure_async(env: Environment, reader: AsyncReader, name: str, concurrency: int = 8) -> TextExposure:
    """Like :func:`read_exposure`, for a reader that calls a model (periods are read concurrently)."""
    import asyncio

    sem = asyncio.Semaphore(concurrency)

    async def one(user: UserEnv, p: int) -> list[TextExposureFinding]:
        async with sem:
            return check_changes(user, p, await reader(user, p))

    jobs = [one(u, p) for u in env.users for p in range(len(u.periods))]
    results = await asyncio.gather(*jobs)
    changes = sum(len(p.updates) for u in env.users for p in u.periods)
    return TextExposure(name, changes, [f for r in results for f in r])
