"""Where a run keeps its files, and the manifest that pins its protocol.

Every JSON file (and every line of sessions.jsonl) has a pydantic model in :mod:`amemgym.records` and a
``format_version``; readers go through those models (see docs/run-files.md).

RUNDIR/
  manifest.json               protocol: config, seeds, versions, env hash, prompt hashes, models (no secrets)
  metrics.json                every number, per period and overall, plus usage per role
  usage.json                  usage of the last invocation(s), merged
  usage.journal               one line per finished call of the running invocation; with
  usage.pending.json          its usage flushed every few seconds, folded into usage.json by the next
                              invocation if this one was killed
  failures.json               users/periods that failed in the last invocation
  users/<id>/sessions.jsonl   one record per finished session (append-only); <id> is the user id itself
                              when it is a safe file name, else see user_folder
  users/<id>/state.jsonl      the live agent's checkpoint after the last finished session, as a journal:
                              a whole record, then what changed at each later checkpoint (engine/journal.py);
                              runs of earlier versions kept it whole in users/<id>/state.json
  users/<id>/snapshots/period_XX.json   the agent snapshot evaluated for period XX
  users/<id>/eval/period_XX.json        evaluation results of period XX
  users/<id>/upper_bound.json           upper-bound answers per (question, combination)
  users/<id>/trace.jsonl      the whole episode in order, assembled at the end
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ...engine.rundir import move_unit
from ...engine.unit_writer import UnitWriter
from ...errors import RunError
from ...records import SessionRecord, State, as_dict, parse_record, versioned
from ...runfiles import FAILURES, MANIFEST, METRICS, USAGE, USAGE_PENDING
from ...storage import read_jsonl

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: Longest user id used as a folder name as it is; longer ones are shortened and hashed like unsafe ones.
_MAX_PLAIN = 120


#: The names of a user's files inside its folder (what the engine's :class:`UnitWriter` writes by name).
SESSIONS = "sessions.jsonl"
#: The checkpoint journal, and the whole-file checkpoint of earlier versions that it replaces.
STATE = "state.jsonl"
LEGACY_STATE = "state.json"
UPPER_BOUND = "upper_bound.json"
TRACE = "trace.jsonl"


def snapshot_name(period: int) -> str:
    """The name of a period's snapshot inside a user's folder."""
    return f"snapshots/period_{period:02d}.json"


def evaluation_name(period: int) -> str:
    """The name of a period's evaluation inside a user's folder."""
    return f"eval/period_{period:02d}.json"


def read_state(out: UnitWriter) -> State | None:
    """A user's checkpoint (None before its first session): the one reader of ``state.jsonl``.

    Raises:
        RunError: the checkpoint is broken (a torn last line is not: that checkpoint did not land).
    """
    return out.read_journal(STATE, State, legacy=LEGACY_STATE)


def save_state(out: UnitWriter, period: int, session: int, snapshot: Any, *, hook_pending: bool = False) -> None:
    """Queue a user's checkpoint: resume at (``period``, ``session``) with the agent's ``snapshot``;
    ``hook_pending``: the period before still owes its after-period hook."""
    out.put_journal(STATE, versioned({"period": period, "session": session, "snapshot": snapshot,
                                      "hook_pending": hook_pending}), replaces=LEGACY_STATE)


def user_unit(user_id: str) -> str:
    """A user's unit id: its folder relative to the run directory (``users/<folder>``)."""
    return f"users/{user_folder(user_id)}"


def user_folder(user_id: str) -> str:
    """The folder name of a user: one-to-one with user ids, so no two users ever share a folder.

    A safe id (letters, digits, ``_ . -``; not ``.`` or ``..``) is its own folder name, which keeps the
    layout readable and stable. Any other id becomes a safe slug plus ``~`` and a hash of the exact id:
    ``~`` never occurs in a safe id, so a hashed name cannot equal a plain one, and ``user/1`` and
    ``user_1`` get different folders.
    """
    if user_id and user_id not in (".", "..") and len(user_id) <= _MAX_PLAIN and not _SAFE.search(user_id):
        return user_id
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:16]
    return f"{_SAFE.sub('_', user_id)[:_MAX_PLAIN]}~{digest}"


def adopt_legacy_folders(root: Path, user_ids: list[str]) -> None:
    """Move the folders an earlier version named by slug alone to their one-to-one names.

    Earlier versions replaced unsafe characters without a hash. A slug folder that only one user of the
    environment can have written is that user's and is renamed; one that several users map to holds their
    sessions interleaved, which no rename can undo, so the run is refused.

    Raises:
        RunError: if users of this environment shared a folder in the earlier layout.
    """
    owners: dict[str, list[str]] = {}
    for uid in user_ids:
        owners.setdefault(_SAFE.sub("_", uid), []).append(uid)
    for slug, uids in owners.items():
        legacy = root / "users" / slug
        moved = [u for u in uids if user_folder(u) != slug]
        if not moved or not legacy.is_dir():
            continue
        if len(uids) > 1:
            raise RunError(f"{legacy}: an earlier amemgym version stored users {', '.join(map(repr, uids))} in this "
                           "one folder, so their results are mixed; run them again into a new --out directory")
        target = root / "users" / user_folder(moved[0])
        if target.exists():
            raise RunError(f"{root}: user {moved[0]!r} has files both in {legacy.name} and in {target.name}; "
                           "use a new --out directory")
        move_unit(root, f"users/{slug}", user_unit(moved[0]))


def folder_clashes(user_ids: list[str]) -> list[tuple[str, str]]:
    """Pairs of ids whose folders are equal or differ only in letter case (one folder on macOS and Windows)."""
    seen: dict[str, str] = {}
    clashes = []
    for uid in user_ids:
        key = user_folder(uid).casefold()
        if key in seen and seen[key] != uid:
            clashes.append((seen[key], uid))
        seen.setdefault(key, uid)
    return clashes


class RunDir:
    """Paths inside one run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def metrics(self) -> Path:
        return self.root / METRICS

    @property
    def usage(self) -> Path:
        return self.root / USAGE

    @property
    def usage_pending(self) -> Path:
        return self.root / USAGE_PENDING

    @property
    def failures(self) -> Path:
        return self.root / FAILURES

    def writer(self, user_id: str | None = None) -> UnitWriter:
        """The engine's writer of a user's folder (of the run directory's own files when ``user_id`` is None)."""
        return UnitWriter(self.root, "." if user_id is None else user_unit(user_id))

    def user(self, user_id: str) -> Path:
        return self.root / user_unit(user_id)

    def sessions(self, user_id: str) -> Path:
        return self.user(user_id) / SESSIONS

    def state(self, user_id: str) -> State | None:
        """The user's checkpoint (see :func:`read_state`)."""
        return read_state(self.writer(user_id))

    def snapshot(self, user_id: str, period: int) -> Path:
        return self.user(user_id) / snapshot_name(period)

    def evaluation(self, user_id: str, period: int) -> Path:
        return self.user(user_id) / evaluation_name(period)

    def upper_bound(self, user_id: str) -> Path:
        return self.user(user_id) / UPPER_BOUND

    def trace(self, user_id: str) -> Path:
        return self.user(user_id) / TRACE

    def session_records(self, user_id: str) -> dict[tuple[int, int], dict[str, Any]]:
        """Finished session records by (period, session); a session redone after a kill replaces the first.

        Raises:
            RunError: a complete line that is JSON but not a session record (naming the file, line and field).
        """
        path = self.sessions(user_id)
        out: dict[tuple[int, int], dict[str, Any]] = {}
        try:
            for n, rec in enumerate(read_jsonl(path), start=1):
                typed = parse_record(rec, SessionRecord, f"{path} record {n}")
                out[(typed.period, typed.session)] = as_dict(typed)
        except (OSError, UnicodeDecodeError) as exc:
            raise RunError(f"{path}: unreadable ({exc})") from None
        return out

