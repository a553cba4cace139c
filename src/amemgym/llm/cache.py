"""A persistent response cache in SQLite, keyed by the canonical request.

Only successful responses are stored. The key never includes an API key, and the stored value is the
response text and its token counts, nothing else; a key the server echoed into a reply or a model name is
masked before it is stored (:func:`amemgym.redact.redact_content`), so a replay shows the mask too.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..redact import redact_content
from .types import CACHE_KEY_FORMAT

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
  key TEXT PRIMARY KEY,
  role TEXT NOT NULL,
  model TEXT NOT NULL,
  value TEXT NOT NULL
)
"""


class ResponseCache:
    """SQLite-backed map from request digest to response record; safe across threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # WAL lets concurrent readers and one writer (other processes too) work without "database locked".
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._stamp_format()

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
        """The stored record for ``key``, or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, role: str, model: str, value: dict[str, Any]) -> None:
        """Store a record (last write wins; identical requests give identical keys)."""
        payload = redact_content(json.dumps(value, ensure_ascii=False, sort_keys=True))
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, role, model, value) VALUES (?, ?, ?, ?)",
                (key, role, redact_content(model), payload),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
