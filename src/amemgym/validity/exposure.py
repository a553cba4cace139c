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
                "counts": {c: self.count(c) for c in ("unrevealed_change", "text_contradicts_state",
                                                       "unread_period")},
                "findings": [asdict(f) for f in self.findings]}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


@cache
def _builtin_domains() -> dict[str, Any]:
    from ..generate.procedural.packs import all_domains

    return {d.name: d for d in all_domains()}


def _phrasing_index(domains: tuple[Any, ...]) -> tuple[tuple[str, str, str], ...]:
    # Longest phrasings first, so a phrasing that contains a shorter one is matched as itself.
    rows = {(_squash(t), var.name, val.name) for d in domains for var in d.variables for val in var.values
            for t in val.phrasings}
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def is_procedural(env: Environment) -> bool:
    """Every user was written by the procedural generator."""
    return bool(env.users) and all(u.amemgym is not None and u.amemgym.generator == "procedural" for u in env.users)


def pack_reader(env: Environment) -> tuple[Reader | None, str]:
    """The lexical reader for a procedural ``env``, or None and why not.

    It needs the very pack files the users were drawn from: every domain the metadata names must be a
    built-in one with the same sha256 (a custom or edited pack would make the phrasings miss, and a
    missed phrasing must not pass for an unrevealed change).
    """
    if not is_procedural(env):
        return None, "not a procedural environment"
    builtin = _builtin_domains()
    used: dict[str, str | None] = {}
    for user in env.users:
        packs = user.amemgym.packs if user.amemgym is not None else None
        if not packs:
            return None, "the environment does not record its content-pack files"
        used.update(packs)
    unknown = sorted(d for d, digest in used.items() if d not in builtin or builtin[d].sha256 != digest)
    if unknown:
        return None, f"domain(s) {', '.join(unknown)} are not the built-in pack's files"
    index = _phrasing_index(tuple(builtin[d] for d in sorted(used)))

    def read(user: UserEnv, period: int) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for session in user.periods[period].sessions:
            text = _squash(session.query)
            for phrasing, var, val in index:
                if phrasing in text:
                    found.add((var, val))
        return found

    return read, "lexical (content-pack phrasings)"


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
            try:
                stated = await reader(user, p)
            except UnreadPeriod as exc:
                # An unread period proves nothing: each of its changes counts as not shown to be revealed.
                return [TextExposureFinding("unread_period", user.id, p, var, up.new, f"the reader failed: {exc}")
                        for var, up in user.periods[p].updates.items()]
            return check_changes(user, p, stated)

    jobs = [one(u, p) for u in env.users for p in range(len(u.periods))]
    results = await asyncio.gather(*jobs)
    changes = sum(len(p.updates) for u in env.users for p in u.periods)
    return TextExposure(name, changes, [f for r in results for f in r])


_JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"stated": {"type": "array", "items": {
        "type": "object", "properties": {"topic": {"type": "string"}, "value": {"type": "string"}},
        "required": ["topic", "value"], "additionalProperties": False}}},
    "required": ["stated"],
    "additionalProperties": False,
}


class UnreadPeriod(Exception):
    """The judge gave no usable reading of one period (the period counts as unverified, never as exposed)."""


def judge_reader(llm: Any) -> AsyncReader:
    """A reader that asks the ``judge`` role which facts a period's openings state.

    The judge sees the openings and the schema (topics and their possible values) only: never the state,
    the updates or ``exposed_states``.
    """
    from ..errors import AMemGymError
    from ..prompts import render

    async def read(user: UserEnv, period: int) -> set[tuple[str, str]]:
        schema = "\n".join(f"- {v}: {', '.join(vals)}" for v, vals in user.state_schema.items())
        openings = "\n\n".join(f'Message {i + 1}:\n"""\n{s.query}\n"""'
                               for i, s in enumerate(user.periods[period].sessions))

        def check(value: Any) -> str | None:
            if not isinstance(value, dict) or not isinstance(value.get("stated"), list):
                return "reply must be a JSON object with a list 'stated'"
            for item in value["stated"]:
                if not isinstance(item, dict) or item.get("topic") not in user.state_schema:
                    return f"unknown topic in stated: {item!r}"
                if item.get("value") not in user.state_schema[item["topic"]]:
                    return f"{item.get('value')!r} is not a value of {item['topic']}"
            return None

        prompt = render("judge_exposure", schema=schema, openings=openings)
        try:
            value, _ = await llm.chat_json("judge", [{"role": "user", "content": prompt}], _JUDGE_SCHEMA,
                                           check=check, max_tokens=400, tag="validate.exposure")
        except AMemGymError as exc:
            raise UnreadPeriod(str(exc)) from None
        return {(x["topic"], x["value"]) for x in value["stated"]}

    return read
