"""One unit's resume state and trace: ``<unit>/checkpoint.json`` and ``<unit>/trace.jsonl``.

A family saves its state after every step through :meth:`Checkpoint.save` and gets it back on resume from
:meth:`Checkpoint.restore`, which refuses a checkpoint written by another unit, policy or agent (the
``identity``). Given the unit's ledger, each save also keeps the usage of the unit so far, so that the record
of a unit finished over several invocations counts all of them (:meth:`Checkpoint.usage`). Its trace lines go
through :meth:`Checkpoint.trace`; a resume drops the lines of the step a kill interrupted (that step is played
again), so the trace never holds a step twice.

A checkpoint that cannot be read (cut short, not JSON, not a checkpoint's shape, or a state its family cannot
rebuild) would fail the unit on every resume. It is set aside instead (``checkpoint.json.discarded``, with the
trace it belonged to), and the unit is played again from its first step: no other unit's files are touched,
and with the same replies the unit's numbers are those of an uninterrupted run. :attr:`Checkpoint.discarded`
says why, and the engine puts it in the unit's record and in one line on the console. A checkpoint written for
another unit, policy or agent is still refused: that is another run's folder, not damage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..llm.usage import UsageLedger
from ..records import UnitCheckpoint, read_record, versioned
from ..storage import read_jsonl
from .unit_writer import UnitWriter

__all__ = ["CHECKPOINT_FILE", "DISCARDED", "TRACE_FILE", "Checkpoint", "read_trace"]

CHECKPOINT_FILE = "checkpoint.json"
TRACE_FILE = "trace.jsonl"
#: The suffix a damaged checkpoint (and its trace) gets when set aside.
DISCARDED = ".discarded"


def read_trace(unit_dir: Path, *, finished: bool = False) -> list[dict[str, Any]]:
    """The trace records of a unit folder: complete lines only, or, for a ``finished`` unit (whose trace can no
    longer end in an interrupted append), all of them.

    Raises:
        RunError: a line is damaged (see :func:`~amemgym.storage.read_jsonl`).
    """
    path = Path(unit_dir) / TRACE_FILE
    return list(read_jsonl(path, whole=finished)) if path.exists() else []


class Checkpoint:
    """The checkpoint and trace of the unit folder ``unit_dir``, written by the one ``identity``.

    Args:
        unit_dir: the unit's folder inside the run directory.
        identity: who writes it (the unit's digest, the policy, the agent); a resume must match it.
        step_key: the trace field holding the step a line belongs to, and the state field holding the next
            step to play (the trace keeps lines of earlier steps on resume).
        run_dir: the run directory holding ``unit_dir`` (default ``unit_dir`` itself).
        ledger: the unit's ledger in this invocation, saved with each state (None: no usage is kept).
    """

    def __init__(self, unit_dir: Path, identity: Mapping[str, str], *, step_key: str = "event",
                 next_key: str = "next_event", run_dir: Path | None = None,
                 ledger: UsageLedger | None = None) -> None:
        self.ledger = ledger
        #: The unit's usage in the invocations before this one, up to their last save (read by :meth:`restore`).
        self.earlier = UsageLedger()
        self._state: dict[str, Any] | None = None  # the last state saved or restored
        self.dir = Path(unit_dir)
        #: The run directory the unit's folder is in (a family whose unit reads its neighbours' files needs it).
        self.run_dir = Path(run_dir) if run_dir is not None else self.dir
        self.out = UnitWriter(self.dir)
        self.identity = {k: str(v) for k, v in identity.items()}
        self.step_key, self.next_key = step_key, next_key
        #: Why this invocation set an unreadable checkpoint aside and started the unit over (None: it did not).
        self.discarded: str | None = None

    @property
    def path(self) -> Path:
        """``checkpoint.json``."""
        return self.dir / CHECKPOINT_FILE

    def exists(self) -> bool:
        """Whether the unit has been started."""
        return self.path.exists()

    def restore(self) -> dict[str, Any] | None:
        """The saved state (None for a fresh unit, whose stale trace is then removed).

        A checkpoint that cannot be read as one is set aside (:meth:`discard`) and None returned.

        Raises:
            RunError: the checkpoint was written for another identity, or is not a regular file.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            (self.dir / TRACE_FILE).unlink(missing_ok=True)
            return None
        try:
            saved = read_record(self.path, UnitCheckpoint)
        except RunError as exc:
            if self.path.is_symlink() or not self.path.is_file():
                raise  # a link or a folder in its place was put there on purpose: named, not moved
            self.discard(str(exc))
            return None
        # A checkpoint written before an identity key existed matches on the keys it has.
        mismatch = [k for k, v in saved.identity.items() if self.identity.get(k, v) != v]
        if mismatch:
            raise RunError(f"{self.dir} holds a run of another {' and '.join(mismatch)}; use a new --out")
        state = dict(saved.state)
        self._state = dict(state)
        self.earlier = UsageLedger.from_dict(saved.usage)
        nxt = int(state.get(self.next_key, 0))
        kept = [r for r in read_trace(self.dir) if r.get(self.step_key, -1) < nxt]
        self.out.put_text_now(TRACE_FILE, "".join(json.dumps(r) + "\n" for r in kept))
        return state

    def discard(self, why: str) -> None:
        """Set the checkpoint and its trace aside (suffix :data:`DISCARDED`) so the unit starts over from its first
        step; ``why`` (naming the file) is kept in :attr:`discarded`. A family calls it too when the state read
        back is not one it can rebuild. Returns None, the state of a fresh unit."""
        self.out.set_aside_now(CHECKPOINT_FILE, CHECKPOINT_FILE + DISCARDED)
        self.out.set_aside_now(TRACE_FILE, TRACE_FILE + DISCARDED)
        self._state = None
        self.earlier = UsageLedger()  # what the damaged file counted cannot be read; usage.json still has it
        self.discarded = (f"{why}; set aside as {CHECKPOINT_FILE}{DISCARDED}, and the unit played again from its "
                          f"first {self.step_key}")

    def save(self, state: Mapping[str, Any]) -> None:
        """Save the state after a finished step (atomically)."""
        self._state = dict(state)
        record: dict[str, Any] = {"identity": self.identity, "state": self._state}
        if self.ledger is not None:
            record["usage"] = self.usage().to_dict()
        self.out.put_now(CHECKPOINT_FILE, versioned(record))

    def keep_usage(self) -> None:
        """Save the last state again with the usage so far: a unit that fails keeps the calls of its unfinished
        step in its count (the step is played again on resume, and those calls were spent)."""
        if self._state is not None and self.ledger is not None:
            self.save(self._state)

    def usage(self) -> UsageLedger:
        """The unit's usage so far: the earlier invocations' (to their last save) and this one's."""
        total = UsageLedger()
        total.merge(self.earlier)
        if self.ledger is not None:
            total.merge(self.ledger)
        return total

    def trace(self, record: Mapping[str, Any]) -> None:
        """Append one line to the unit's trace."""
        self.out.append_now(TRACE_FILE, [record])
