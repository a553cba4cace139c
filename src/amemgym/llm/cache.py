"""A persistent response cache in SQLite, keyed by the canonical request.

Writes are batched: a stored reply is kept in memory (and found there by :meth:`ResponseCache.get`) until
:data:`BATCH_ROWS` replies wait or the oldest has waited :data:`BATCH_SECONDS`, checked at each store, and
then all of them go to the file in one transaction, not one per call (about a third of the CPU of a store).
:meth:`ResponseCache.flush` writes them at once; closing the cache, the client's ``aclose`` and the
interpreter's exit do. A process killed outright loses only the replies still waiting, which a resumed
run asks the model again; SQLite's journal keeps the file whole either way (tests/llm/test_cache_batching.py).

Only successful responses are stored. The key never includes an API key, and the stored value is the
response text and its token counts, nothing else; a key the server echoed into a reply or a model name is
masked before it is stored (:func:`amemgym.redact.redact_content`), so a replay shows the mask too.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..redact import redact_content
from .types import CACHE_KEY_FORMAT

#: Replies waiting in memory before they are written in one transaction.
BATCH_ROWS = 64
#: Seconds the oldest waiting reply may wait before the next store writes them all.
BATCH_SECONDS = 1.0

_INSERT = "INSERT OR REPLACE INTO responses (key, role, model, value) VALUES (?, ?, ?, ?)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
  key TEXT PRIMARY KEY,
  role TEXT NOT NULL,
  model TEXT NOT NULL,
  value TEXT NOT NULL
)
"""


class _Waiting:
    """Replies stored in this process and not yet written to one file, shared by every cache open on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: key -> (role, model, value as stored)
        self.rows: dict[str, tuple[str, str, str]] = {}
        #: When the oldest of them was stored (``time.monotonic``).
        self.oldest = 0.0


_WAITING: dict[str, _Waiting] = {}
_WAITING_LOCK = threading.Lock()


def _waiting_for(path: Path) -> _Waiting:
    with _WAITING_LOCK:
        return _WAITING.setdefault(os.path.realpath(path), _Waiting())


class ResponseCache:
    """SQLite-backed map from request digest to response record; safe across threads and processes.

    Every cache of a process open on one file shares the replies waiting to be written (a second client
    on the same file finds what the first stored at once); another process sees them once written.
    """

    def __init__(self, path: Path, *, batch_rows: int = BATCH_ROWS, batch_seconds: float = BATCH_SECONDS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.batch_rows = batch_rows
        self.batch_seconds = batch_seconds
        self._lock = threading.Lock()  # the connection's; taken after the waiting replies' lock, never before
        self._waiting = _waiting_for(self.path)
        # WAL lets concurrent readers and one writer (other processes too) work without "database locked".
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._stamp_format()
        # Waiting replies reach the file at a normal exit too, also when nobody closes the cache.
        atexit.register(_flush_at_exit, weakref.ref(self))

    def _stamp_format(self) -> None:
        """Record which key format the file's keys use (SQLite's ``user_version``).

        A file from an older format keeps its rows, which simply never match a new key (the format is hashed
        into every key); it is restamped so the change is visible. A file written by a newer amemgym is
        refused: its keys could mean something this code does not know.
        """
        with self._lock:
            found = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
            if found > CACHE_KEY_FORMAT:
                self._conn.close()
                raise ConfigError(f"the response cache {self.path} uses key format {found}, newer than this "
                                  f"amemgym's {CACHE_KEY_FORMAT}; upgrade amemgym or use another cache_path")
            if found < CACHE_KEY_FORMAT:
                self._conn.execute(f"PRAGMA user_version = {CACHE_KEY_FORMAT}")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record for ``key`` (written or still waiting), or None."""
        with self._waiting.lock:
            waiting = self._waiting.rows.get(key)
        if waiting is not None:
            return dict(json.loads(waiting[2]))
        # A reply leaves the waiting ones only once it is committed, so one that was waiting is found above.
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, role: str, model: str, value: dict[str, Any]) -> None:
        """Store a record (last write wins; identical requests give identical keys); see the module's batching."""
        payload = redact_content(json.dumps(value, ensure_ascii=False, sort_keys=True))
        row = (role, redact_content(model), payload)
        now = time.monotonic()
        waiting = self._waiting
        with waiting.lock:
            if not waiting.rows:
                waiting.oldest = now
            waiting.rows[key] = row
            if len(waiting.rows) >= self.batch_rows or now - waiting.oldest >= self.batch_seconds:
                self._write_waiting()

    def flush(self) -> None:
        """Write every waiting reply now, in one transaction."""
        with self._waiting.lock:
            self._write_waiting()

    def _write_waiting(self) -> None:
        """Write the waiting replies (the caller holds their lock); they stay waiting if the write fails."""
        rows = [(key, *rest) for key, rest in self._waiting.rows.items()]
        if not rows:
            return
        with self._lock:
            # One transaction (the connection autocommits otherwise): committed whole, or rolled back whole.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(_INSERT, rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        self._waiting.rows.clear()

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Write the waiting replies and close the connection."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            with self._lock:
                self._conn.close()
                self._closed = True

    def __del__(self) -> None:
        # A cache dropped without a close still writes what waits (its connection is still open here).
        if not self._closed and hasattr(self, "_conn"):
            with contextlib.suppress(Exception):
                self.flush()

    _closed = False


def _flush_at_exit(ref: weakref.ref[ResponseCache]) -> None:
    cache = ref()
    if cache is not None and not cache._closed:
        with contextlib.suppress(sqlite3.Error):  # e.g. its folder is gone; nothing to report at exit
            cache.flush()
