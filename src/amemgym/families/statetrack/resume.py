"""Where a user's episode may resume: its checkpoint, held against the records it must agree with.

The checkpoint journal (``state.jsonl``) says where to resume and what the agent remembers there; the session
records (``sessions.jsonl``) and the period snapshots say what was played. Commit order (docs/design.md §4)
fixes how far apart they can be: a session's record lands before the checkpoint past it, so a checkpoint is at
most one session behind the records and never ahead of them, and each session record carries the digest of the
snapshot saved right after it. A checkpoint that breaks one of these (a line added or edited by hand, a stale
copy) would let a resumed run play from a memory or a position the records never had, and so change its
numbers. The saves after the last one that agrees are dropped, with a one-line note, and the run resumes from
that one (its writer's first save rewrites the journal whole); when none agrees, the user is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from ...engine.unit_writer import UnitWriter
from ...errors import RunError
from ...records import Snapshot, State
from ...redact import MASK, redact_content
from .data.model import UserEnv
from .layout import LEGACY_STATE, SESSIONS, STATE, RunDir, read_state, save_state, snapshot_name

__all__ = ["checked_state", "disagreement", "lost_fix", "lost_sessions", "refuse_lost_sessions", "snapshot_digest"]

_log = logging.getLogger("amemgym.resume")


def _sessions(user: UserEnv) -> list[tuple[int, int]]:
    """Every (period, session) of ``user``, in play order."""
    return [(p, s) for p, period in enumerate(user.periods) for s in range(len(period.sessions))]


def lost_sessions(records: dict[tuple[int, int], Any], user: UserEnv, upto: tuple[int, int]) -> list[tuple[int, int]]:
    """The sessions before (period, session) ``upto`` that have no record among ``records`` (by (period,
    session), as :meth:`RunDir.session_records` reads them)."""
    return [key for key in _sessions(user) if key < upto and key not in records]


def refuse_lost_sessions(rundir: RunDir, user: UserEnv, upto: tuple[int, int], fix: str) -> None:
    """Refuse a user whose files claim the sessions before ``upto`` were played when some are not recorded.

    Raises:
        RunError: naming the file, how many sessions are gone, the first of them, and ``fix``.
    """
    lost = lost_sessions(rundir.session_records(user.id), user, upto)
    if lost:
        p, s = lost[0]
        raise RunError(f"{rundir.sessions(user.id)}: {len(lost)} session(s) of user {user.id!r} were played but "
                       f"are not recorded (first: period {p} session {s}); {fix}")


def lost_fix(rundir: RunDir, user: UserEnv) -> str:
    """What a resume tells the user to do about a user whose records cannot be resumed from."""
    return f"the conversation cannot be resumed: delete {rundir.user(user.id)} and run again to play this user anew"


def snapshot_digest(snapshot: Any) -> str:
    """The sha256 of an agent snapshot as the checkpoint holds it (what a session record keeps of the checkpoint
    after it): its JSON text as the journal writes it, with what looks like a key masked as every write masks
    it. A folded checkpoint gives the same text (the journal writes no line a key spans), so the digest of a
    masked text is the digest of the text that was saved, and a mask forged into a checkpoint still differs."""
    text = redact_content(json.dumps(snapshot, ensure_ascii=False, separators=(",", ":")))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def disagreement(state: State | None, user: UserEnv, records: dict[tuple[int, int], dict[str, Any]],
                 out: UnitWriter, *, hooked: bool) -> str | None:
    """Why the checkpoint ``state`` cannot be resumed beside ``records`` (None when it agrees).

    Args:
        state: the checkpoint (None: no checkpoint saved).
        user: the user it belongs to.
        records: the user's session records by (period, session).
        out: the user's folder, for the period snapshots.
        hooked: the run has an after-period hook, which changes the agent after a period's snapshot.
    """
    order = _sessions(user)
    at = (state.period, state.session) if state is not None else (0, 0)
    last = len(user.periods)
    if at[0] > last or (at[0] == last and at[1] != 0) or (at[0] < last and at[1] > len(user.periods[at[0]].sessions)):
        return f"it resumes at period {at[0]} session {at[1]}, which the environment does not have"
    done = sum(1 for key in order if key < at)
    lost = lost_sessions(records, user, at)
    if lost:
        return (f"{len(lost)} session(s) it counts as played are not recorded in {SESSIONS} "
                f"(first: period {lost[0][0]} session {lost[0][1]})")
    beyond = [key for key in order[done + 1:] if key in records]
    if beyond:
        where = "there is none" if state is None else f"it resumes at period {at[0]} session {at[1]}"
        return (f"{SESSIONS} records period {beyond[-1][0]} session {beyond[-1][1]}, more than one session past the "
                f"checkpoint ({where})")
    if state is None:
        return None
    if at[1] > 0:
        expected = records[(at[0], at[1] - 1)].get("state_sha256")
        if isinstance(expected, str) and snapshot_digest(state.snapshot) != expected:
            return (f"its agent memory is not the one recorded after period {at[0]} session {at[1] - 1} "
                    f"in {SESSIONS}")
    elif at[0] > 0 and (not hooked or state.hook_pending):
        saved = out.read(snapshot_name(at[0] - 1), Snapshot)
        if saved is not None and snapshot_digest(state.snapshot) != snapshot_digest(saved.snapshot):
            return (f"its agent memory is not the one saved at the end of period {at[0] - 1} "
                    f"({snapshot_name(at[0] - 1)})")
    return None


def _note_masked(state: State | None, user: UserEnv) -> None:
    """Say so when the memory a user resumes from had text masked on its way to disk (text shaped like a key):
    the agent now remembers the mask where an uninterrupted run remembered the text, so its numbers may differ
    from that run's."""
    if state is not None and MASK in json.dumps(state.snapshot, ensure_ascii=False):
        _log.warning("note: user %r resumes from a checkpoint in which text shaped like a key was masked (%s): its "
                     "agent remembers the mask where an uninterrupted run remembers the text, so its numbers may "
                     "differ from that run's", user.id, MASK)


def checked_state(rundir: RunDir, out: UnitWriter, user: UserEnv, *, hooked: bool) -> State | None:
    """The checkpoint to resume ``user`` from: the latest save that agrees with the records (None: start).

    Saves after it are dropped with a one-line note, and the checkpoint is queued again on ``out`` so the
    journal is rewritten without them.

    Raises:
        RunError: no save agrees (or the checkpoint is gone while sessions are recorded); the line names the
            file, why, and the fix.
    """
    records = rundir.session_records(user.id)
    saved = out.journal_saves(STATE)
    state = read_state(out)
    why = disagreement(state, user, records, out, hooked=hooked)
    if why is None:
        _note_masked(state, user)
        return state
    for upto in range(saved - 1, 0, -1):
        earlier = out.read_journal(STATE, State, upto=upto)
        if disagreement(earlier, user, records, out, hooked=hooked) is None:
            assert earlier is not None
            _log.warning("note: %s: dropped the last %d checkpoint save(s), which disagree with the records (%s); "
                         "resuming user %r from period %d session %d", out.path(STATE), saved - upto, why, user.id,
                         earlier.period, earlier.session)
            save_state(out, earlier.period, earlier.session, earlier.snapshot, hook_pending=earlier.hook_pending)
            _note_masked(earlier, user)
            return earlier
    name = STATE if saved or state is None else LEGACY_STATE
    raise RunError(f"{out.path(name)}: the checkpoint of user {user.id!r} disagrees with its records: {why}; "
                   f"{lost_fix(rundir, user)}")
