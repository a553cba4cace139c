"""Audit of the user simulator's turns in a run directory (docs/design.md §4: what the simulator must never do).

Every user message after the opening one (round >= 1) is checked for:

- ``reveals_value`` (lexical, :func:`~..simulate.leaks.leaked_values`): a schema value's name, or its words,
  appears in the turn while the session's opening did not expose that value;
- ``ends_conversation`` (lexical): a goodbye or "that's all" phrase;
- ``empty`` and ``copies_opening``: a blank turn, or one that repeats the opening utterance;
- ``echoes_assistant``: a word-for-word copy of the assistant's previous reply (case and spacing ignored),
  ``near_echo``: nearly the same words as that reply, or a passage of it, ``repeats_user_turn``: the same
  text as an earlier user turn of the session. These and the two above are *degenerate* turns: the simulator
  stopped playing the user, so the conversation tests nothing. Their share is also in ``metrics.json`` (``simulator``);
- with the judge (one structured call per turn, role ``judge``): ``judge_reveals_value`` (a value the
  judge reads in the turn beyond what the opening exposed), ``judge_contradicts_state`` and
  ``judge_ends_conversation``. A judge call that fails is recorded per turn, never scored.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ....errors import AMemGymError, RunError
from ....llm.client import LLMClient
from ....llm.redact import redact
from ....prompts import render
from ....records import Manifest, as_dict, read_record
from ....runfiles import SIM_AUDIT
from ....textsim import jaccard, shares_run, words
from ..cut import recorded_environment
from ..data.model import Environment, Session, UserEnv
from ..episode import recorded_sessions
from ..layout import RunDir
from ..simulate.leaks import leaked_values
from ..simulate.simulator import ECHO_RUN

LEXICAL_CHECKS = ("reveals_value", "ends_conversation", "empty", "copies_opening", "echoes_assistant", "near_echo",
                  "repeats_user_turn")
#: Checks that mean the simulator produced no real user turn.
DEGENERATE_CHECKS = ("empty", "copies_opening", "echoes_assistant", "near_echo", "repeats_user_turn")
#: Above this share of degenerate simulator turns, ``run``, ``report`` and ``audit-sim`` warn.
DEGENERATE_WARN = 0.2
JUDGE_CHECKS = ("judge_reveals_value", "judge_contradicts_state", "judge_ends_conversation")
EXCERPT = 160
COPY_SIMILARITY = 0.9

_ENDINGS = re.compile(
    r"\b(good\s?-?bye|bye(?:\s+for\s+now)?|farewell|see\s+you(?:\s+later|\s+soon)?|talk\s+(?:to\s+you\s+)?(?:later|soon)"
    r"|that'?s\s+(?:all|everything)(?:\s+i\s+(?:needed|wanted|had))?|nothing\s+else|no\s+more\s+questions"
    r"|i'?m\s+all\s+set|take\s+care|have\s+a\s+(?:great|good|nice|lovely)\s+(?:day|night|evening|weekend)"
    r"|signing\s+off|that\s+(?:covers|answers)\s+(?:it|everything))\b",
    re.IGNORECASE,
)
_JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "stated": {"type": "array", "items": {
            "type": "object", "properties": {"topic": {"type": "string"}, "value": {"type": "string"}},
            "required": ["topic", "value"], "additionalProperties": False}},
        "contradicts_state": {"type": "boolean"},
        "ends_conversation": {"type": "boolean"},
    },
    "required": ["stated", "contradicts_state", "ends_conversation"],
    "additionalProperties": False,
}


@dataclass
class TurnAudit:
    """The checks of one simulator turn; ``flags`` lists the checks it failed."""

    user: str
    period: int
    session: int
    round: int
    excerpt: str
    flags: list[str] = field(default_factory=list)
    revealed: list[str] = field(default_factory=list)
    judge: dict[str, Any] | None = None
    judge_error: str | None = None


def unexposed(session: Session, variable: str, value: str) -> bool:
    """Whether stating ``variable=value`` would tell the agent more than the session's opening did."""
    return session.exposed_states.get(variable) != value


def lexical_reveals(user: UserEnv, session: Session, text: str) -> list[str]:
    """``variable=value`` for every schema value named in ``text`` that the opening did not expose."""
    return [f"{var}={val}" for var, val in leaked_values(text, user.state_schema, session.exposed_states)]


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def degenerate_flags(text: str, opening: str, previous_reply: str | None, earlier_turns: list[str]) -> list[str]:
    """The degenerate-turn checks (see ``DEGENERATE_CHECKS``) one simulator turn fails."""
    flags: list[str] = []
    body = _squash(text)
    if not body:
        return ["empty"]
    if body == _squash(opening) or jaccard(words(text), words(opening)) >= COPY_SIMILARITY:
        flags.append("copies_opening")
    if previous_reply is not None:
        if body == _squash(previous_reply):
            flags.append("echoes_assistant")
        elif jaccard(words(text), words(previous_reply)) >= COPY_SIMILARITY or (
                len(body) >= 40 and body in _squash(previous_reply)) or (
                len(reply := _squash(previous_reply)) >= 40 and reply in body) or shares_run(
                text, previous_reply, ECHO_RUN):
            # A turn that is a long verbatim chunk of the reply is an echo too, just a truncated one; so is one
            # that holds the whole reply with something added (the simulator's own instructions, say), or a
            # long passage of it restyled ("here's a message for you: **...**").
            flags.append("near_echo")
    if any(body == _squash(t) for t in earlier_turns):
        flags.append("repeats_user_turn")
    return flags


def lexical_flags(user: UserEnv, session: Session, text: str, previous_reply: str | None = None,
                  earlier_turns: list[str] | None = None) -> tuple[list[str], list[str]]:
    """The lexical checks a turn fails, and the values it reveals."""
    flags: list[str] = []
    revealed = lexical_reveals(user, session, text)
    if revealed:
        flags.append("reveals_value")
    if _ENDINGS.search(text):
        flags.append("ends_conversation")
    flags += degenerate_flags(text, session.query, previous_reply, earlier_turns or [])
    return flags, revealed


def simulator_turns(messages: list[dict[str, Any]]) -> list[tuple[int, str, str | None, list[str]]]:
    """Every simulated user turn after the opening: (round, text, the assistant reply before it, earlier turns)."""
    out: list[tuple[int, str, str | None, list[str]]] = []
    previous: str | None = None
    seen: list[str] = []
    for m in messages:
        if m["role"] == "assistant":
            previous = m["content"]
            continue
        if seen:
            out.append((len(seen), m["content"], previous, list(seen[1:])))
        seen.append(m["content"])
    return out


def degenerate_summary(env: Environment, rundir: RunDir) -> dict[str, Any]:
    """Counts of degenerate simulator turns over a run (lexical, no model call): what ``metrics.json`` records."""
    counts = {c: 0 for c in DEGENERATE_CHECKS}
    turns = degenerate = 0
    for user in env.users:
        for (p, s), messages in recorded_sessions(rundir, user.id).items():
            if p >= len(user.periods) or s >= len(user.periods[p].sessions):
                continue
            opening = user.periods[p].sessions[s].query
            for _, text, previous, earlier in simulator_turns(messages):
                flags = degenerate_flags(text, opening, previous, earlier)
                turns += 1
                degenerate += bool(flags)
                for f in flags:
                    counts[f] += 1
    rate = degenerate / turns if turns else None
    return {"turns": turns, "degenerate": degenerate, "degenerate_rate": rate, "counts": counts,
            "warn": rate is not None and rate > DEGENERATE_WARN,
            "definition": "simulated user turns after the opening that are empty, copy the opening, echo or "
                          "nearly echo the assistant's previous reply, or repeat an earlier user turn"}


def degenerate_warning(summary: dict[str, Any] | None) -> str | None:
    """The console warning for a run whose simulator mostly did not play the user, else None."""
    if not summary or not summary.get("warn"):
        return None
    c = summary["counts"]
    return (f"warning: {summary['degenerate']}/{summary['turns']} simulated user turns "
            f"({summary['degenerate_rate']:.0%}) are degenerate (echoes of the assistant: {c['echoes_assistant']}, "
            f"near echoes: {c['near_echo']}, repeats: {c['repeats_user_turn']}, empty: {c['empty']}); the "
            "conversations may test nothing - see `amemgym audit-sim`")


def judge_messages(user: UserEnv, period: int, session: Session, text: str) -> list[dict[str, str]]:
    """The judge's request for one turn."""
    schema = "\n".join(f"- {v}: {', '.join(vals)}" for v, vals in user.state_schema.items())
    state = "\n".join(f"- {v}: {x}" for v, x in user.periods[period].state.items())
    prompt = render("judge_sim_audit", schema=schema, state=state, opening=session.query, turn=text)
    return [{"role": "user", "content": prompt}]


def _check_judge(user: UserEnv) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "reply must be a JSON object"
        for key in ("contradicts_state", "ends_conversation"):
            if not isinstance(value.get(key), bool):
                return f"{key} must be true or false"
        stated = value.get("stated")
        if not isinstance(stated, list):
            return "stated must be a list"
        for item in stated:
            if not isinstance(item, dict) or item.get("topic") not in user.state_schema:
                return f"unknown topic in stated: {item!r}"
            if item.get("value") not in user.state_schema[item["topic"]]:
                return f"{item.get('value')!r} is not a value of {item['topic']}"
        return None

    return check


async def judge_turn(llm: LLMClient, user: UserEnv, period: int, session: Session, turn: TurnAudit,
                     text: str) -> None:
    """Ask the judge about one turn and add its flags; a failed call is recorded on the turn."""
    try:
        value, _ = await llm.chat_json("judge", judge_messages(user, period, session, text), _JUDGE_SCHEMA,
                                       check=_check_judge(user), max_tokens=200, tag="audit.sim")
    except AMemGymError as exc:
        turn.judge_error = redact(str(exc))
        return
    turn.judge = value
    beyond = [f"{s['topic']}={s['value']}" for s in value["stated"] if unexposed(session, s["topic"], s["value"])]
    if beyond:
        turn.flags.append("judge_reveals_value")
        turn.revealed = sorted(set(turn.revealed) | set(beyond))
    if value["contradicts_state"]:
        turn.flags.append("judge_contradicts_state")
    if value["ends_conversation"]:
        turn.flags.append("judge_ends_conversation")


def environment_of(rundir: RunDir, env_path: Path | None = None) -> Environment:
    """The run's environment: ``env_path`` if given, else the manifest's ``environment_file``; either must be
    the environment the run was made on (its recorded sha256).

    Raises:
        RunError: not a run directory, or the environment is missing or is not the run's.
    """
    if not rundir.manifest.exists():
        raise RunError(f"{rundir.root}: not a run directory (no manifest.json)")
    env, why = recorded_environment(as_dict(read_record(rundir.manifest, Manifest)), env_path)
    if env is None:
        hint = "" if env_path is not None else "; pass --env with the run's environment"
        raise RunError(f"{rundir.root}: cannot audit: {why}{hint}")
    return env


async def audit_run(rundir: RunDir, env: Environment, *, llm: LLMClient | None = None) -> dict[str, Any]:
    """Check every simulator turn of the run; with ``llm``, also ask the judge. Writes ``sim_audit.json``."""
    turns: list[TurnAudit] = []
    jobs = []
    for user in env.users:
        for (p, s), messages in sorted(recorded_sessions(rundir, user.id).items()):
            if p >= len(user.periods) or s >= len(user.periods[p].sessions):
                raise RunError(f"{rundir.sessions(user.id)}: session {s} of period {p} is not in the environment")
            session = user.periods[p].sessions[s]
            for r, text, previous, earlier in simulator_turns(messages):
                flags, revealed = lexical_flags(user, session, text, previous, earlier)
                turn = TurnAudit(user.id, p, s, r, text.strip()[:EXCERPT], flags, revealed)
                turns.append(turn)
                if llm is not None:
                    jobs.append(judge_turn(llm, user, p, session, turn, text))
    await asyncio.gather(*jobs)
    judged = [t for t in turns if t.judge is not None]
    checks = LEXICAL_CHECKS + (JUDGE_CHECKS if llm is not None else ())
    rates = {c: _rate(sum(1 for t in (judged if c in JUDGE_CHECKS else turns) if c in t.flags),
                      len(judged) if c in JUDGE_CHECKS else len(turns)) for c in checks}
    degenerate = sum(1 for t in turns if set(t.flags) & set(DEGENERATE_CHECKS))
    result = {
        "turns": len(turns), "judged": len(judged) if llm is not None else None,
        "degenerate": degenerate, "degenerate_rate": _rate(degenerate, len(turns)),
        "judge_failures": sum(1 for t in turns if t.judge_error), "rates": rates,
        "counts": {c: sum(1 for t in turns if c in t.flags) for c in checks},
        "offending": [asdict(t) for t in turns if t.flags or t.judge_error],
    }
    rundir.writer().put_now(SIM_AUDIT, result)
    return result


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None
