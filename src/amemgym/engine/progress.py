"""The live progress line of a run whose work comes in units (episodes): units done, calls, stalls.

On a terminal it is a rich progress bar. Otherwise (a log file, CI) :class:`PlainLog` decides when a plain
line is printed, for every family alike: a progress line per tenth of the work (or a minute of slower
progress), and a stall line as soon as a call has waited past the threshold, then at most once a minute
while it goes on, so a hung endpoint is reported within half a minute without burying the log. The
statetrack runner's display (``families/statetrack/progress.py``) shows the same call counts through
:func:`ledger_info`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..console import new_console
from ..llm.usage import UsageLedger

__all__ = ["CPU_HINT", "LOG_EVERY_SECONDS", "Display", "STALL_SECONDS", "TICK_SECONDS", "PlainLog", "UnitProgress",
           "ledger_info", "poll_forever", "stall_text"]

#: A call on the wire longer than this is reported as waiting (the display shows how many and the longest).
STALL_SECONDS = 30.0
#: How often the display refreshes on its own, so a hung call shows even when no unit finishes.
TICK_SECONDS = 5.0
#: Without a terminal, a progress line after this many seconds of progress slower than a tenth of the work,
#: and a repeated stall line at most this often: a line per event or per tick would bury the log.
LOG_EVERY_SECONDS = 60.0
#: Said once with a stall when a call waits on the embedded model, whose calls run on this machine's CPU.
CPU_HINT = "the embedded model runs on this machine's CPU: one call can take minutes"


async def poll_forever(poll: Callable[[], None], every: float = 1.0) -> None:
    """Run ``poll`` in a thread every ``every`` seconds until cancelled.

    The watcher of a run directory that workers in other processes write (the Ray and process executors):
    each poll reads the files and reports what appeared, off the event loop.
    """
    while True:
        await asyncio.sleep(every)
        await asyncio.to_thread(poll)


def stall_text(ledger: UsageLedger, threshold_s: float = STALL_SECONDS) -> str:
    """``"2 calls waiting > 30 s (longest 95 s)"``, or an empty string when nothing waits that long."""
    count, longest = ledger.stalled(threshold_s)
    if not count:
        return ""
    return f"{count} call{'s' if count != 1 else ''} waiting > {threshold_s:g} s (longest {longest:.0f} s)"


def ledger_info(ledger: UsageLedger, stall_seconds: float = STALL_SECONDS) -> str:
    """Calls, in flight (with each endpoint's adaptive limit), cache hits, tokens, errors and any stall."""
    t = ledger.totals()
    limits = "/".join(str(lim.limit) for lim in ledger.limiters.values())
    cap = f" limit {limits}" if limits else ""
    stall = stall_text(ledger, stall_seconds)
    return (f"calls {t.calls} (in flight {ledger.in_flight}{cap}) cached {t.cache_hits} "
            f"tokens {t.prompt_tokens}+{t.completion_tokens} errors {t.failures}" + (f"; {stall}" if stall else ""))


class Display(Protocol):
    """What a run's live display must do (the engine's :class:`UnitProgress`, or a family's own)."""

    def start(self, total: int, ledger: UsageLedger | Callable[[], UsageLedger]) -> None:
        """Show ``total`` units to go, counting the calls of ``ledger`` (or of the ledger it returns)."""
        ...

    def unit_done(self) -> None:
        """One more unit finished (or failed)."""
        ...

    def close(self) -> None:
        """Stop the display and its timers."""
        ...


class PlainLog:
    """When a plain progress log speaks: what a run's display does without a terminal, for every family."""

    def __init__(self, every_seconds: float = LOG_EVERY_SECONDS) -> None:
        self.every_seconds = every_seconds
        self._last_log: float | None = None
        self._last_step = -1
        self._last_stall: float | None = None
        self._hinted = False

    def progress_due(self, done: int, total: int, now: float) -> bool:
        """True when ``done`` of ``total`` reaches a new tenth, or progress has been slower than that for a while."""
        step = 10 * done // total if total else 10
        slow = self._last_log is None or now - self._last_log >= self.every_seconds
        if step > self._last_step or slow:
            self._last_log, self._last_step = now, step
            return True
        return False

    def stall_line(self, ledger: UsageLedger, stall_seconds: float, now: float) -> str:
        """The stall text to print now ("" for nothing): at once when calls start waiting, then once a minute."""
        stall = stall_text(ledger, stall_seconds)
        if not stall:
            self._last_stall = None
            return ""
        if self._last_stall is not None and now - self._last_stall < self.every_seconds:
            return ""
        self._last_stall = now
        if not self._hinted and any(str(k).startswith("embedded:") for k in ledger.limiters):
            self._hinted = True
            return f"{stall} ({CPU_HINT})"
        return stall


class UnitProgress:
    """Counts finished units of a run (``noun`` names them) with the calls of its ledger.

    A call is reported once it has waited ``stall_seconds``, at the next tick: with the defaults, no later
    than :data:`STALL_SECONDS` after it was sent.
    """

    def __init__(self, console: Console | None = None, *, noun: str = "units", live: bool | None = None,
                 tick_seconds: float = TICK_SECONDS, stall_seconds: float = STALL_SECONDS - TICK_SECONDS) -> None:
        self.console = console if console is not None else new_console(stderr=True)
        self.noun = noun
        self.live = sys.stderr.isatty() if live is None else live
        self.tick_seconds = tick_seconds
        self.stall_seconds = stall_seconds
        self._progress: Progress | None = None
        self._task: object = None
        self._source: Callable[[], UsageLedger] = UsageLedger
        self._ticker: asyncio.Task[None] | None = None
        self._plain = PlainLog()
        self.done = 0
        self.total = 0

    def start(self, total: int, ledger: UsageLedger | Callable[[], UsageLedger]) -> None:
        """Show ``total`` units to go, counting the calls of ``ledger`` (or of the ledger it returns, read at
        each refresh); ticks while the event loop runs."""
        self.total = total
        self._source = ledger if callable(ledger) else (lambda: ledger)
        if self.live:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), console=self.console)
            self._progress.start()
            self._task = self._progress.add_task(self.noun, total=total, info="")
        try:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        except RuntimeError:
            self._ticker = None

    def unit_done(self) -> None:
        """One more unit finished (or failed)."""
        self.done += 1
        self._update()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_seconds)
            self._update(heartbeat=True)

    def _update(self, heartbeat: bool = False) -> None:
        ledger = self._source()
        info = ledger_info(ledger, self.stall_seconds)
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, info=info)  # type: ignore[arg-type]
            return
        now = time.monotonic()
        if heartbeat:  # plain logs only speak up between units when something is stuck
            stall = self._plain.stall_line(ledger, self.stall_seconds, now)
            if stall:
                hint = f" ({CPU_HINT})" if stall.endswith(f"({CPU_HINT})") else ""
                self.console.print(f"{self.noun} {self.done}/{self.total}; {info}{hint}", highlight=False,
                                   markup=False)
        elif self._plain.progress_due(self.done, self.total, now):
            self.console.print(f"{self.noun} {self.done}/{self.total}; {info}", highlight=False, markup=False)

    def close(self) -> None:
        """Stop the display and its timer."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
