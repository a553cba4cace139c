"""Flags that keep a run off the ranking whatever its scores: facts about how it was made, not what it scored.

Both families read them here, so the leaderboard, ``compare`` and the report of either family say the same
thing (docs/design.md §12):

- a run resumed with ``--allow-model-change`` mixes the answers of two models, so it is flagged and never
  ranked as if it were one model;
- an off-policy run is comparable only with runs that replayed the same recorded conversations, identified
  by the content hash of the source run's sessions (:func:`source_sessions_sha256`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def model_change_flag(changes: Iterable[Mapping[str, Any]] | None) -> str | None:
    """``"model changed during the run (agent a -> b)"`` for recorded model changes, or None without any."""
    # The same change recorded by several episodes or trials is named once.
    moves = list(dict.fromkeys(f"{c.get('role') or 'agent'} {c.get('from')} -> {c.get('to')}" for c in changes or ()))
    if not moves:
        return None
    return f"{FLAG_PREFIX} ({'; '.join(moves)}): not ranked"


#: How a flag of this module starts; other flags of a run's metrics are degeneracy flags.
FLAG_PREFIX = "model changed during the run"


#: How the endpoint flag starts.
ENDPOINT_PREFIX = "endpoint problem"


def endpoint_flag(problems: Iterable[Mapping[str, Any]] | None) -> str | None:
    """``"endpoint problem (agent: 40 of 60 attempts unusable)"`` for a run whose endpoint mostly failed to answer
    (``metrics.json``'s ``endpoint_problems``; a pool of trials gives each role's sum): its scores measure the
    server, not the model."""
    by_role: dict[str, list[int]] = {}
    for p in problems or ():
        if isinstance(p, Mapping):
            counts = by_role.setdefault(str(p.get("role")), [0, 0])
            counts[0] += int(p.get("unusable") or 0)
            counts[1] += int(p.get("attempts") or 0)
    parts = [f"{role}: {bad} of {total} attempts unusable" for role, (bad, total) in by_role.items()]
    return f"{ENDPOINT_PREFIX} ({'; '.join(parts)}): not ranked" if parts else None


def shown(flag: str) -> str:
    """A run's flag as tables show it: degeneracy flags marked ``DEGENERATE:``, the flags of this module as they are."""
    return flag if flag.startswith((FLAG_PREFIX, ENDPOINT_PREFIX)) else f"DEGENERATE: {flag}"


def with_flag(metrics: dict[str, Any], flag: str | None) -> dict[str, Any]:
    """``metrics`` (a statetrack ``metrics.json``) with ``flag`` added to its overall flags, which every reader
    of a run treats as a reason not to rank it."""
    if flag is None:
        return metrics
    overall = dict(metrics.get("overall") or {})
    flags = [f for f in overall.get("flags") or [] if f != flag]
    return {**metrics, "overall": {**overall, "flags": [*flags, flag]}}


def source_sessions_sha256(run_dir: Path) -> str:
    """The content hash of a run's recorded conversations (every user's ``sessions.jsonl``, by user folder).

    Two off-policy runs replayed the same conversations exactly when their sources have the same hash,
    whatever the source folders are called or wherever they sit.
    """
    digest = hashlib.sha256()
    users = Path(run_dir) / "users"
    for path in sorted(users.glob("*/sessions.jsonl")):
        digest.update(path.parent.name.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
