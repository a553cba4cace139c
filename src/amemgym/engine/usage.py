"""Usage of a run across its invocations: ``usage.json`` and, while one runs, ``usage.pending.json``.

Every family's run directory keeps one cumulative count. A running invocation flushes what it has spent to
``usage.pending.json`` every :data:`FLUSH_SECONDS`; the next invocation folds a pending file left by a kill
into ``usage.json`` before it starts, so a SIGKILL loses at most one flush interval of counting. The id of
the last invocation folded in keeps a kill between the write of ``usage.json`` and the removal of the
pending file from counting the same calls twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..llm.usage import UsageLedger
from ..records import PendingUsage, UsageFile, as_dict, read_record, versioned
from ..storage import atomic_write_json

__all__ = ["FLUSH_SECONDS", "UsageBook"]

#: How often a running invocation writes its usage so far (a SIGKILL loses at most this much of it).
FLUSH_SECONDS = 2.0


class UsageBook:
    """The usage files of the run directory ``root``."""

    def __init__(self, root: Path) -> None:
        self.usage = Path(root) / "usage.json"
        self.pending = Path(root) / "usage.pending.json"

    def cumulative(self) -> dict[str, Any]:
        """``usage.json`` as a dict (empty when there is none); read strictly, since restarting the count from
        zero would under-report what the run spent."""
        return as_dict(read_record(self.usage, UsageFile)) if self.usage.exists() else {}

    def save(self, invocation: str, spent: UsageLedger) -> None:
        """Add ``spent`` (the invocation ``invocation``'s usage) to the cumulative count, once."""
        data = self.cumulative()
        if data.get("invocation") == invocation:
            self.pending.unlink(missing_ok=True)
            return
        total = UsageLedger.from_dict(data["cumulative"]) if data.get("cumulative") else UsageLedger()
        total.merge(spent)
        atomic_write_json(self.usage, versioned({"cumulative": total.to_dict(), "last_invocation": spent.to_dict(),
                                                 "invocation": invocation}))
        self.pending.unlink(missing_ok=True)

    def fold_pending(self) -> None:
        """Add the usage a killed invocation flushed before it died."""
        if not self.pending.exists():
            return
        try:
            pending = read_record(self.pending, PendingUsage)
            ledger = UsageLedger.from_dict(pending.usage)
        except (RunError, KeyError, TypeError, ValueError):
            self.pending.unlink(missing_ok=True)  # torn by the kill: nothing trustworthy to add
            return
        self.save(pending.invocation, ledger)

    async def flush_forever(self, invocation: str, ledger: UsageLedger, ready: Awaitable[Any] | None = None,
                            every: float = FLUSH_SECONDS) -> None:
        """Write ``ledger`` to ``usage.pending.json`` every ``every`` seconds until cancelled (after ``ready``)."""
        if ready is not None:
            await asyncio.shield(ready)  # cancelling the flusher must not cancel what it waits for
        while True:
            await asyncio.sleep(every)
            atomic_write_json(self.pending, versioned({"invocation": invocation, "usage": ledger.to_dict()}))
