"""Who reads each user's opening text for the exposure check: the pack's phrasings, the judge role, or nobody
(then loudly UNCHECKED). docs/design.md §8.

``amemgym validate`` chooses among three modes (``--judge/--no-judge``, default auto):

- ``auto``: the pack reads the users whose variables it recognises from their schema; the judge reads the
  rest, and re-reads the users whose misses may be the pack's (the file says it came from edited pack
  files). A file the pack reads entirely makes no model call.
- ``always``: the judge reads every user.
- ``never``: no judge; users the pack cannot read stay unchecked, said in the verdict, the JSON and the
  ``metrics.json`` of every run on the file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..data.model import Environment
from .exposure import TextExposure, judge_reader, pack_reader, read_exposure, read_exposure_async, recognise_pack

JUDGE_MODES = ("auto", "always", "never")

#: How far the judge's reading can be trusted, printed with every verdict it took part in.
JUDGE_NOTE = ("exposure was (partly) read by the judge model: a pass is only as good as its reading (a small or "
              "embedded model misses implied facts and sometimes invents some; spot-check findings)")


#: bench/bench_exposure_judge.py with the embedded qwen2.5-coder-0.5b-instruct, 2 users x 3 periods (load ~8).
MEASURED = "bench/bench_exposure_judge.py"
MEASURED_FOUND = "4/21"
MEASURED_INVENTED = "22/26"
MEASURED_SILENT = "3/21"


def judge_note(model: str, embedded: bool) -> str:
    """What a verdict read by ``model`` is worth; sharper for the small embedded model."""
    if not embedded:
        return f"{JUDGE_NOTE}. Judge: {model}"
    return (f"exposure was (partly) read by the embedded {model}, a small local model, so its reading is weak "
            "evidence: a pass is only as good as its reading. Measured for the embedded "
            f"qwen2.5-coder-0.5b-instruct on the tiny procedural file ({MEASURED}), it found {MEASURED_FOUND} of "
            "the changes its openings state (each miss is a false FAIL) and "
            f"{MEASURED_INVENTED} of the facts it reported are not in the text (one that matches a change is a "
            "false PASS, the dangerous side); on openings that state nothing it still 'found' "
            f"{MEASURED_SILENT} changes, about as many as on the real ones. Treat its FAIL as 'read it yourself' "
            "and its PASS as no proof; for "
            "a verdict you publish give the judge role a 7B-class or hosted model (llm.roles.judge)")


def judge_mode(flag: bool | None) -> str:
    """``--judge`` is always, ``--no-judge`` never, neither auto."""
    return "auto" if flag is None else "always" if flag else "never"


@dataclass(frozen=True)
class TextJudge:
    """The judge role as a text reader: reads the given users of a file and says how far it can be trusted.

    Attributes:
        name: the reader's name in the report (e.g. ``LLM judge (model at endpoint)``).
        note: how far its reading can be trusted (printed with the verdict).
        read: reads the users whose ids are given; raises an ``AMemGymError`` (exit 2) when the judge cannot
            be reached at all, before any call.
    """

    name: str
    note: str
    read: Callable[[Environment, set[str]], TextExposure]


def llm_judge(llm: Any, name: str, note: str = JUDGE_NOTE, before: Callable[[], None] | None = None,
              close: bool = False) -> TextJudge:
    """A :class:`TextJudge` asking ``llm``'s judge role, one call per (user, period).

    Args:
        before: called once before the first call (the command's preflight); it raises when the judge
            cannot be reached.
        close: close ``llm`` after reading (the command owns its client; tests reuse theirs).
    """
    full = f"LLM judge ({name})"

    def read(env: Environment, users: set[str]) -> TextExposure:
        if before is not None:
            before()

        async def go() -> TextExposure:
            try:
                return await read_exposure_async(env, judge_reader(llm), full, only=users)
            finally:
                if close:
                    await llm.aclose()

        return asyncio.run(go())

    return TextJudge(full, note, read)


def _unchecked(env: Environment, exposure: TextExposure | None, why: str, hint: str) -> str | None:
    if exposure is None:
        return (f"exposure UNCHECKED: no text reader for this file ({why}); the changes were checked against "
                f"the metadata only. {hint}")
    if exposure.unread_users:
        n, total = len(exposure.unread_users), len(env.users)
        return (f"exposure UNCHECKED for {n} of {total} users (user {exposure.unread_users[0]}: {why}); the "
                f"others were read from their text. {hint}")
    return None


def read_text(env: Environment, judge: TextJudge | None = None, judge_all: bool = False,
              progress: Callable[[str, Callable[[], Any]], Any] | None = None,
              ) -> tuple[TextExposure | None, str | None]:
    """Read every user's openings with the pack or the judge; return the reading and why part is unchecked.

    Args:
        judge: the judge role as a reader (None: no judge, ``never``).
        judge_all: the judge reads every user (``always``); else only those the pack cannot read (``auto``).
        progress: runs the pack's and the judge's readings as named, timed steps.
    """
    hint = ("`amemgym validate` has the judge role read them unless --no-judge is given" if judge is None
            else "the judge did not read them")
    ids = {u.id for u in env.users}
    run: Callable[[str, Callable[[], Any]], Any] = progress or (lambda _, fn: fn())

    def judged(users: set[str]) -> TextExposure:
        assert judge is not None
        periods = sum(len(u.periods) for u in env.users if u.id in users)
        step = f"judge ({periods} periods, one call each)"
        return run(step, lambda: judge.read(env, users))

    if judge is not None and judge_all:
        return judged(ids), None

    def by_pack() -> tuple[TextExposure | None, dict[str, str], str]:
        reader, name, caveat = pack_reader(env)
        _, unread = recognise_pack(env)
        lexical = read_exposure(env, reader, name, caveat, skip=set(unread)) if reader is not None else None
        return lexical, unread, next(iter(unread.values()), name)

    lexical, unread, why = run("text reader", by_pack)
    targets = set(unread)
    if lexical is not None and lexical.caveat and lexical.findings:
        targets |= {f.user for f in lexical.findings}  # the built-in phrasings may miss an edited pack's
    if judge is None or not targets:
        return lexical, _unchecked(env, lexical, why, hint)
    return _merge(env, lexical, judged(targets)), None


def _merge(env: Environment, lexical: TextExposure | None, judged: TextExposure) -> TextExposure:
    """The pack's reading of the users the judge did not read, plus the judge's."""
    if lexical is None:
        return judged
    by_judge = set(judged.judged_users)
    findings = [f for f in lexical.findings if f.user not in by_judge] + judged.findings
    stated = {k: v for k, v in lexical.stated.items() if k[0] not in by_judge} | judged.stated
    changes = sum(len(p.changes) for u in env.users for p in u.periods
                  if u.id in by_judge or u.id not in lexical.unread_users)
    kept = len({u.id for u in env.users} - by_judge - set(lexical.unread_users))
    name = f"{lexical.reader} for {kept} user(s), {judged.reader} for {len(by_judge)}"
    # The caveat was about the pack's misses; every user with one was handed to the judge.
    return TextExposure(name, changes, findings, stated, None, [], judged.judged_users)
