"""One unit's resume state and trace: ``<unit>/checkpoint.json`` and ``<unit>/trace.jsonl``.

A family saves its state after every step through :meth:`Checkpoint.save` and gets it back on resume from
:meth:`Checkpoint.restore`, which refuses a checkpoint written by another unit, policy or agent (the
``identity``). Its trace lines go through :meth:`Checkpoint.trace`; a resume drops the lines of the step a
kill interrupted (that step is played again), so the trace never holds a step twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..records import UnitCheckpoint, read_record, versioned
from ..storage import read_jsonl
from .unit_writer import UnitWriter

__all__ = ["CHECKPOINT_FILE", "TRACE_FILE", "Checkpoint", "read_trace"]

CHECKPOINT_FILE = "checkpoint.json"
TRACE_FILE = "trace.jsonl"


def read_trace(unit_dir: Path) -> list[dict[str, Any]]:
    """The trace records of a unit folder (complete lines only)."""
    path = Path(unit_dir) / TRACE_FILE
    return list(read_jsonl(path)) if path.exists() else []


class Checkpoint:
    """The checkpoint and trace of the unit folder ``unit_dir``, written by the one ``identity``.

    Args:
        unit_dir: the unit's folder inside the run directory.
        identity: who writes it (the unit's digest, the policy, the agent); a resume must match it.
        step_key: the trace field holding the step a line belongs to, and the state field holding the next
            step to play (the trace keeps lines of earlier steps on resume).
        run_dir: the run directory holding ``unit_dir`` (default ``unit_dir`` itself).
    """

    def __init__(self, unit_dir: Path, identity: Mapping[str, str], *, step_key: str = "event",
                 next_key: str = "next_event", run_dir: Path | None = None) -> None:
        self.dir = Path(unit_dir)
        #: The run directory the unit's folder is in (a family whose unit reads its neighbours' files needs it).
        self.run_dir = Path(run_dir) if run_dir is not None else self.dir
        self.out = UnitWriter(self.dir)
        self.identity = {k: str(v) for k, v in identity.items()}
        self.step_key, self.next_key = step_key, next_key

    @property
    def path(self) -> Path:
        """``checkpoint.json``."""
        return self.dir / CHECKPOINT_FILE

    def exists(self) -> bool:
        """Whether the unit has been started."""
        return self.path.exists()

    def restore(self) -> dict[str, Any] | None:
        """The saved state (None for a fresh unit, whose stale trace is then removed).

        Raises:
            RunError: the checkpoint is unreadable or was written for another identity.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            (self.dir / TRACE_FILE).unlink(missing_ok=True)
            return None
        saved = read_record(self.path, UnitCheckpoint)
        # A checkpoint written before an identity key existed matches on the keys it has.
        mismatch = [k for k, v in saved.identity.items() if self.identity.get(k, v) != v]
        if mismatch:
            raise RunError(f"{self.dir} holds a run of another {' and '.join(mismatch)}; use a new --out")
        state = dict(saved.state)
        nxt = int(state.get(self.next_key, 0))
        kept = [r for r in read_trace(self.dir) if r.get(self.step_key, -1) < nxt]
        self.out.put_text_now(TRACE_FILE, "".join(json.dumps(r) + "\n" for r in kept))
        return state

    def save(self, state: Mapping[str, Any]) -> None:
        """Save the state after a finished step (atomically)."""
        self.out.put_now(CHECKPOINT_FILE, versioned({"identity": self.identity, "state": dict(state)}))

    def trace(self, record: Mapping[str, Any]) -> None:
        """Append one line to the unit's trace."""
        self.out.append_now(TRACE_FILE, [record])
