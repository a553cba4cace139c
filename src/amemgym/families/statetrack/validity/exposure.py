"""Exposure read from the text: does each period's opening text actually tell the agent what changed?

The environment's ``exposed_states`` is metadata written by the generator; an agent only ever sees the
opening utterances. A reader here gets the utterances and nothing else (never ``exposed_states``, the
events or the summaries) and says which (variable, value) facts they state. A change the reader cannot
find in any opening of its period is a change the agent is scored on without having been told.

The text of every file is read (``read_text``), user by user:

- Users whose variables are the built-in content pack's are read lexically: the pack knows every
  phrasing of every value, and the composer inserts phrasings verbatim, so a phrasing found in the text
  states its value. The pack is recognised from the file's *content* (its schemas), never from the
  ``_amemgym`` metadata, so deleting the metadata cannot switch the check off. A phrasing inside an
  attribution or a denial ("my neighbour keeps saying ..., which is nothing like my life") or a
  hypothetical ("if ... ") states nothing.
- Other users need understanding: the judge role reads them (``TextJudge``; ``amemgym validate`` does so
  by default, ``--judge`` has it read every user). Without a judge their exposure is *unchecked*, which
  the verdict and every run's ``metrics.json`` say loudly (``unchecked_reason``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from ....errors import AMemGymError
from ....prompts import render
from ..data.model import Environment, UserEnv
from ..generate.procedural.packs import all_domains

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
    """What the text reader found, per check, and how many changes it looked at.

    Attributes:
        stated: the facts the reader found per (user id, period); the honest recency reader of the
            window strategies knows exactly these.
        caveat: why a finding of this reader may be the reader's miss rather than the text's (e.g. the file
            says it was made from an edited pack); findings then leave exposure unchecked instead of failing.
    """

    reader: str
    changes: int
    findings: list[TextExposureFinding]
    stated: dict[tuple[str, int], set[tuple[str, str]]] = field(default_factory=dict, repr=False)
    caveat: str | None = None
    unread_users: list[str] = field(default_factory=list)
    judged_users: list[str] = field(default_factory=list)

    def count(self, check: str) -> int:
        """Findings of one check."""
        return sum(1 for f in self.findings if f.check == check)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"reader": self.reader, "changes": self.changes, "caveat": self.caveat,
                "unread_users": self.unread_users, "judged_users": self.judged_users,
                "counts": {c: self.count(c) for c in ("unrevealed_change", "text_contradicts_state",
                                                       "unread_period")},
                "findings": [asdict(f) for f in self.findings]}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


@cache
def _builtin_domains() -> dict[str, Any]:
    return {d.name: d for d in all_domains()}


def _phrasing_index(domains: tuple[Any, ...]) -> tuple[tuple[str, str, str], ...]:
    # Longest phrasings first, so a phrasing that contains a shorter one is matched as itself.
    rows = {(_squash(t), var.name, val.name) for d in domains for var in d.variables for val in var.values
            for t in val.phrasings}
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def recognise_user(user: UserEnv) -> tuple[set[str], str]:
    """The built-in domains one user's variables come from, recognised from the schema alone.

    Returns:
        The domain names, or an empty set and why the user's variables are not the pack's.
    """
    by_variable = {var.name: (d.name, {v.name for v in var.values})
                   for d in _builtin_domains().values() for var in d.variables}
    used: set[str] = set()
    for var, values in user.state_schema.items():
        known = by_variable.get(var)
        if known is None or not set(values) <= known[1]:
            return set(), f"variable {var!r} is not a built-in content-pack variable"
        used.add(known[0])
    return used, ""


def recognise_pack(env: Environment) -> tuple[list[str], dict[str, str]]:
    """The built-in domains ``env``'s recognised users draw from, and why each other user is not read.

    Recognition is per user, so one odd user cannot switch the check off for the rest of the file.
    """
    domains: set[str] = set()
    unread: dict[str, str] = {}
    for user in env.users:
        found, why = recognise_user(user)
        if found:
            domains |= found
        else:
            unread[user.id] = why
    return sorted(domains), unread


def _claimed_other_pack(env: Environment, domains: list[str]) -> str | None:
    """Why the metadata says the users come from files other than the built-in ones (None if it does not)."""
    builtin = _builtin_domains()
    claimed: dict[str, str | None] = {}
    for user in env.users:
        if user.amemgym is not None and user.amemgym.packs:
            claimed.update(user.amemgym.packs)
    other = sorted(d for d in domains if d in claimed and claimed[d] != builtin[d].sha256)
    other += sorted(d for d in claimed if d not in builtin)
    return f"the file says domain(s) {', '.join(other)} came from edited pack files" if other else None


#: Words around a phrasing that make it someone else's claim, a denial, a hypothetical, a dream or a thing of
#: the past, not a statement about the user now. The composer's own lead-ins and tails use none of them
#: (tested on generated files).
_NOT_STATED = re.compile(
    r"\b(not|never|no|nor|nothing|none|neither|isn't|aren't|wasn't|weren't|don't|doesn't|didn't|won't|"
    r"wouldn't|can't|cannot|couldn't|unlike|instead|rather|untrue|false|wrong|nonsense|says?|saying|said|"
    r"tells?|told|claims?|claimed|thinks?|thought|believes?|assumes?|assumed|according|rumou?rs?|heard|"
    r"supposedly|imagine|imagined|pretend|pretending|if|would|wish|wished|dream|dreams|dreamt|dreamed|dreaming|"
    r"nightmare|someday|maybe|might|used|formerly|previously|childhood|younger|"
    r"jokes?|joked|joking|neighbou?rs?|friends?|sister|brother|cousin|colleagues?|coworkers?|boss)\b"
)
_SENTENCE_END = re.compile(r"[.!?;]")


def states(text: str, phrasing: str) -> bool:
    """Whether ``text`` (squashed) states ``phrasing`` as a fact about the writer.

    An occurrence counts unless the rest of its sentence attributes it to someone else, denies it or makes
    it hypothetical; the phrasing's own words are not looked at (a phrasing may itself say "no longer").
    """
    start = text.find(phrasing)
    while start >= 0:
        end = start + len(phrasing)
        before = text[:start]
        cut = max((m.end() for m in _SENTENCE_END.finditer(before)), default=0)
        after = _SENTENCE_END.search(text, end)
        context = before[cut:] + " " + text[end: after.start() if after else len(text)]
        if not _NOT_STATED.search(context):
            return True
        start = text.find(phrasing, start + 1)
    return False


def pack_reader(env: Environment) -> tuple[Reader | None, str, str | None]:
    """The lexical reader for the users of ``env`` whose variables are the built-in pack's, else None.

    Returns:
        The reader (or None), its name (or why there is none) and a caveat when the metadata says the users
        come from edited pack files (the built-in phrasings could then miss a change that is stated).
    """
    domains, unread = recognise_pack(env)
    if not domains:
        return None, next(iter(unread.values()), "no users"), None
    builtin = _builtin_domains()
    index = _phrasing_index(tuple(builtin[d] for d in domains))

    def read(user: UserEnv, period: int) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for session in user.periods[period].sessions:
            text = _squash(session.query)
            for phrasing, var, val in index:
                if (var, val) not in found and phrasing in text and states(text, phrasing):
                    found.add((var, val))
        return found

    return read, "lexical (content-pack phrasings)", _claimed_other_pack(env, domains)


def unchecked_reason(env: Environment) -> str | None:
    """Why exposure of ``env`` cannot be checked from its text without the judge (None when it can).

    A run's ``metrics.json`` carries this line, so a result on such a file never looks fully validated.
    """
    _, unread = recognise_pack(env)
    if not unread:
        return None
    which = "every user" if len(unread) == len(env.users) else f"{len(unread)} of {len(env.users)} users"
    return (f"exposure unchecked for {which}: their openings cannot be read without a model "
            f"({next(iter(unread.values()))}); a run does not read them: `amemgym validate` has the judge role "
            "check that every change is stated")


def check_changes(user: UserEnv, period: int, stated: set[tuple[str, str]]) -> list[TextExposureFinding]:
    """Compare what the reader found in one period's text with that period's changes and state."""
    out: list[TextExposureFinding] = []
    state = user.periods[period].state
    for var, update in user.periods[period].changes.items():
        if (var, update.new) not in stated:
            out.append(TextExposureFinding("unrevealed_change", user.id, period, var, update.new,
                                           f"{var}: {update.old} -> {update.new} is not stated by any opening of "
                                           "the period"))
    for var, value in sorted(stated):
        if var in state and state[var] != value:
            out.append(TextExposureFinding("text_contradicts_state", user.id, period, var, value,
                                           f"an opening states {var}={value}, the state has {state[var]}"))
    return out


def read_exposure(env: Environment, reader: Reader, name: str, caveat: str | None = None,
                  skip: set[str] | None = None) -> TextExposure:
    """Run ``reader`` over every period of every user (but those in ``skip``, which stay unread)."""
    findings: list[TextExposureFinding] = []
    stated: dict[tuple[str, int], set[tuple[str, str]]] = {}
    changes = 0
    for user in env.users:
        if skip and user.id in skip:
            continue
        for p, period in enumerate(user.periods):
            changes += len(period.changes)
            stated[(user.id, p)] = reader(user, p)
            findings += check_changes(user, p, stated[(user.id, p)])
    return TextExposure(name, changes, findings, stated, caveat, sorted(skip or ()))


async def read_exposure_async(env: Environment, reader: AsyncReader, name: str, concurrency: int = 8,
                              only: set[str] | None = None) -> TextExposure:
    """Like :func:`read_exposure`, for a reader that calls a model (periods are read concurrently).

    Args:
        only: the ids of the users to read (default every user); the others are left out of the result.
    """
    users = [u for u in env.users if only is None or u.id in only]
    sem = asyncio.Semaphore(concurrency)

    stated: dict[tuple[str, int], set[tuple[str, str]]] = {}

    async def one(user: UserEnv, p: int) -> list[TextExposureFinding]:
        async with sem:
            try:
                found = await reader(user, p)
            except UnreadPeriod as exc:
                # An unread period proves nothing: each of its changes counts as not shown to be revealed.
                return [TextExposureFinding("unread_period", user.id, p, var, up.new, f"the reader failed: {exc}")
                        for var, up in user.periods[p].changes.items()]
            stated[(user.id, p)] = found
            return check_changes(user, p, found)

    jobs = [one(u, p) for u in users for p in range(len(u.periods))]
    results = await asyncio.gather(*jobs)
    changes = sum(len(p.changes) for u in users for p in u.periods)
    return TextExposure(name, changes, [f for r in results for f in r], stated,
                        judged_users=[u.id for u in users])


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
