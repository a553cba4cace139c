"""Usage of a run across its invocations: ``usage.json`` and, while one runs, ``usage.journal`` and
``usage.pending.json``.

Every family's run directory keeps one cumulative count. While an invocation runs, each finished model call
appends a line to ``usage.journal`` (calls, tokens, seconds, cost: :class:`~amemgym.llm.usage.CallJournal`),
and the whole ledger (retries, faults and cache hits as well) is flushed to ``usage.pending.json`` every
:data:`FLUSH_SECONDS`. The next invocation folds what a kill left into ``usage.json`` before it starts: the
pending ledger with its journaled counters taken from the journal. So after a SIGKILL the calls and tokens
are exact for every call whose reply had arrived, and only retries, faults and cache hits can miss up to one
flush interval. The id of the last invocation folded in keeps a kill between the write of ``usage.json`` and
the removal of the other two files from counting the same calls twice.

Those files are the only count of what earlier invocations spent, so their loss is detected rather than
restarted from zero: ``usage.json`` is written as soon as an invocation begins (naming it as ``running`` until
it ends), so a resumed run without ``usage.json``, or whose interrupted invocation left no ``usage.journal``,
has lost calls. Its count is then marked ``incomplete`` (why, kept by every later invocation) and said in one
line: it is a lower bound, never passed off as the whole.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..llm.usage import JOURNALED, CallJournal, UsageLedger, read_journal
from ..records import PendingUsage, UsageFile, as_dict, read_record, versioned
from ..runfiles import USAGE, USAGE_JOURNAL, USAGE_PENDING
from ..storage import atomic_write_json

__all__ = ["FLUSH_SECONDS", "LiveUsage", "UsageBook", "incomplete_note"]

_log = logging.getLogger("amemgym.usage")


def incomplete_note(reason: str | None) -> str | None:
    """The console line for a usage count marked ``incomplete`` with ``reason`` (None when it is not)."""
    return f"usage incomplete: {reason}; the run's usage in metrics.json is a lower bound" if reason else None


#: How often a running invocation writes its usage so far (a SIGKILL loses at most this much of it).
FLUSH_SECONDS = 2.0


class UsageBook:
    """The usage files of the run directory ``root``."""

    def __init__(self, root: Path) -> None:
        self.usage = Path(root) / USAGE
        self.pending = Path(root) / USAGE_PENDING
        self.journal_path = Path(root) / USAGE_JOURNAL

    def journal(self, invocation: str) -> CallJournal:
        """The call journal of the invocation ``invocation`` (after :meth:`fold_pending`)."""
        return CallJournal(self.journal_path, invocation)

    def cumulative(self) -> dict[str, Any]:
        """``usage.json`` as a dict (empty when there is none); read strictly, since restarting the count from
        zero would under-report what the run spent."""
        return as_dict(read_record(self.usage, UsageFile)) if self.usage.exists() else {}

    def answered(self) -> dict[str, str]:
        """Per role the model the replies named in the latest invocation counted in ``usage.json``."""
        total = UsageLedger.from_dict(self.cumulative().get("cumulative") or {})
        return {role: u.answered for role, u in total.roles.items() if u.answered}

    def save(self, invocation: str, spent: UsageLedger) -> None:
        """Add ``spent`` (the invocation ``invocation``'s usage) to the cumulative count, once."""
        self._add(invocation, spent)
        self._forget()

    def _add(self, invocation: str, spent: UsageLedger, data: dict[str, Any] | None = None) -> None:
        data = self.cumulative() if data is None else data
        if data.get("invocation") == invocation:
            return
        total = UsageLedger.from_dict(data["cumulative"]) if data.get("cumulative") else UsageLedger()
        total.merge(spent)
        record: dict[str, Any] = {"cumulative": total.to_dict(), "last_invocation": spent.to_dict(),
                                  "invocation": invocation}
        if data.get("incomplete"):
            record["incomplete"] = data["incomplete"]
        atomic_write_json(self.usage, versioned(record))

    def start(self, invocation: str) -> None:
        """Record that ``invocation`` is under way (before its first unit call), so that a later invocation can
        tell a kill that left its call journal from one whose journal was deleted."""
        self._set(self.cumulative(), "running", invocation)

    def _set(self, data: dict[str, Any], name: str, value: str) -> None:
        """Write ``usage.json`` as ``data`` (what it holds now; an empty count when nothing) with ``name`` set."""
        kept = {k: v for k, v in (data or {"cumulative": {}}).items() if k != "format_version"}
        atomic_write_json(self.usage, versioned({**kept, name: value}))

    def _lost(self, resumed: bool, played: bool) -> str | None:
        """Why the count of earlier invocations is known to be short (None when nothing says so)."""
        if not self.usage.exists():
            if resumed and (played or self.journal_path.exists() or self.pending.exists()):
                return (f"{USAGE} was missing from a run that had already played, so what its earlier "
                        "invocations spent is not counted")
            return None
        running = self.cumulative().get("running")
        if running and not self.journal_path.exists():
            return (f"an interrupted invocation left no {USAGE_JOURNAL} (deleted?), so its calls are counted only "
                    "as far as its last flush, or not at all")
        return None

    def _mark(self, reason: str) -> None:
        data = self.cumulative()
        if data.get("incomplete"):
            return  # the first loss is the one to name; the count stays a lower bound either way
        self._set(data, "incomplete", reason)
        _log.warning("note: usage incomplete: %s; the calls and tokens reported for this run are a lower bound",
                     reason)

    def discard(self) -> None:
        """Drop what an invocation refused before its run began has journaled: no run holds it."""
        self._forget()

    def _forget(self) -> None:
        self.pending.unlink(missing_ok=True)
        self.journal_path.unlink(missing_ok=True)

    def fold_pending(self, *, resumed: bool = False, played: bool = False) -> None:
        """Add the usage of an invocation that was killed: its last flush, with the journal's exact counters.

        Args:
            resumed: the run directory held a run before this invocation (its manifest).
            played: it holds work of that run (a unit's files), so model calls were made.

        When the earlier count is found short, ``usage.json`` is marked ``incomplete`` and a note says so.
        """
        lost = self._lost(resumed, played)
        flushed: dict[str, UsageLedger] = {}
        if self.pending.exists():
            try:
                pending = read_record(self.pending, PendingUsage)
                flushed[pending.invocation] = UsageLedger.from_dict(pending.usage)
            except (RunError, KeyError, TypeError, ValueError):
                pass  # torn by the kill: the journal still has the calls
        journaled = read_journal(self.journal_path)
        for invocation in dict.fromkeys([*flushed, *journaled]):
            spent = flushed.get(invocation) or UsageLedger()
            counted = journaled.get(invocation)
            for role, exact in (counted.roles.items() if counted else ()):
                usage = spent.role(role)
                for name in JOURNALED:
                    # The journal has every finished call; a flush can only be behind it.
                    setattr(usage, name, max(getattr(usage, name), getattr(exact, name)))
            self._add(invocation, spent)
        self._forget()
        if lost is not None:
            self._mark(lost)

    async def flush_forever(self, invocation: str, ledger: UsageLedger | Callable[[], UsageLedger],
                            ready: Awaitable[Any] | None = None, every: float = FLUSH_SECONDS) -> None:
        """Write ``ledger`` (or what it returns) to ``usage.pending.json`` every ``every`` seconds until cancelled
        (after ``ready``)."""
        if ready is not None:
            await asyncio.shield(ready)  # cancelling the flusher must not cancel what it waits for
        while True:
            await asyncio.sleep(every)
            now = ledger() if callable(ledger) else ledger
            atomic_write_json(self.pending, versioned({"invocation": invocation, "usage": now.to_dict()}))


class LiveUsage:
    """A run's ledger together with the ledgers of the units playing right now.

    Each unit counts its calls in its own ledger (its record reports them) and adds them to the run's when it
    ends; until then the flushed usage and the progress line must still see them, or a kill in the middle of
    a long unit would lose its calls and a hung call in it would go unreported.
    """

    def __init__(self, base: UsageLedger) -> None:
        self.base = base
        self._units: list[UsageLedger] = []

    @contextmanager
    def unit(self, ledger: UsageLedger) -> Iterator[UsageLedger]:
        """Count ``ledger`` as live while the block runs; the caller merges it into the base afterwards."""
        self._units.append(ledger)
        try:
            yield ledger
        finally:
            self._units.remove(ledger)

    def now(self) -> UsageLedger:
        """A snapshot: every counter, the calls on the wire with their start times, the endpoints' limits."""
        out = UsageLedger()
        out.limiters = self.base.limiters
        for n, ledger in enumerate([self.base, *self._units]):
            out.merge(ledger)
            out.in_flight += ledger.in_flight
            out._started.update({n * 1_000_000_000 + token: t for token, t in list(ledger._started.items())})
        return out
