"""Where a run keeps its files, and the manifest that pins its protocol.

RUNDIR/
  manifest.json               protocol: config, seeds, versions, env hash, prompt hashes, models (no secrets)
  metrics.json                every number, per period and overall, plus usage per role
  usage.json                  usage of the last invocation(s), merged
  usage.pending.json          usage of the running invocation, flushed every few seconds; folded into
                              usage.json by the next invocation if this one was killed
  failures.json               users/periods that failed in the last invocation
  users/<id>/sessions.jsonl   one record per finished session (append-only)
  users/<id>/state.json       the live agent's checkpoint after the last finished session
  users/<id>/snapshots/period_XX.json   the agent snapshot evaluated for period XX
  users/<id>/eval/period_XX.json        evaluation results of period XX
  users/<id>/upper_bound.json           upper-bound answers per (question, combination)
  users/<id>/trace.jsonl      the whole episode in order, assembled at the end
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..storage import read_jsonl

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class RunDir:
    """Paths inside one run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def usage(self) -> Path:
        return self.root / "usage.json"

    @property
    def usage_pending(self) -> Path:
        return self.root / "usage.pending.json"

    @property
    def failures(self) -> Path:
        return self.root / "failures.json"

    def user(self, user_id: str) -> Path:
        return self.root / "users" / _SAFE.sub("_", user_id)

    def sessions(self, user_id: str) -> Path:
        return self.user(user_id) / "sessions.jsonl"

    def state(self, user_id: str) -> Path:
        return self.user(user_id) / "state.json"

    def snapshot(self, user_id: str, period: int) -> Path:
        return self.user(user_id) / "snapshots" / f"period_{period:02d}.json"

    def evaluation(self, user_id: str, period: int) -> Path:
        return self.user(user_id) / "eval" / f"period_{period:02d}.json"

    def upper_bound(self, user_id: str) -> Path:
        return self.user(user_id) / "upper_bound.json"

    def trace(self, user_id: str) -> Path:
        return self.user(user_id) / "trace.jsonl"

    def session_records(self, user_id: str) -> dict[tuple[int, int], dict[str, Any]]:
        """Finished session records by (period, session); a session redone after a kill replaces the first."""
        out: dict[tuple[int, int], dict[str, Any]] = {}
        for rec in read_jsonl(self.sessions(user_id)):
            try:
                out[(int(rec["period"]), int(rec["session"]))] = rec
            except (KeyError, TypeError, ValueError):
                continue
        return out


def read_run_json(path: Path) -> Any:
    """A JSON file of a run directory; a missing or unreadable one is a :class:`RunError` naming it."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise RunError(f"{path}: missing; is this a finished run directory?") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{path}: unreadable ({exc})") from None
