"""Live progress for runs: a rich display on a terminal, plain log lines otherwise."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any

from ...engine.progress import LOG_EVERY_SECONDS, STALL_SECONDS, TICK_SECONDS, PlainLog, ledger_info, stall_text
from ...llm.usage import UsageLedger

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

#: Re-exported: the display of every family counts calls and stalls the same way (``amemgym.engine.progress``).
__all__ = ["LOG_EVERY_SECONDS", "STALL_SECONDS", "TICK_SECONDS", "RunProgress", "stall_text"]


class RunProgress:
    """Counts sessions and evaluated periods, with tokens, cache hits and errors so far."""

    def __init__(self, console: Console | None = None, *, live: bool | None = None) -> None:
        self._console = console
        self.live = sys.stderr.isatty() if live is None else live
        self._progress: Progress | None = None
        self._ledger: UsageLedger | None = None
        self._plain = PlainLog()
        self._ticker: asyncio.Task[None] | None = None
        self.stall_seconds = STALL_SECONDS

    @property
    def console(self) -> Console:
        """Where the display goes (stderr unless given); made on first use, rich being slow to import."""
        if self._console is None:
            from ...cli_common import new_console

            self._console = new_console(stderr=True)
        return self._console

    def attach(self, events: Any, users: list[Any], ledger: UsageLedger) -> None:
        """Wire the episode hooks to the display."""
        self._ledger = ledger
        total_sessions = sum(len(p.sessions) for u in users for p in u.periods)
        total_evals = sum(len(u.periods) for u in users)
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), console=self.console)
            self._progress.start()
            self._sessions = self._progress.add_task("sessions", total=total_sessions, info="")
            self._evals = self._progress.add_task("evaluations", total=total_evals, info="")
        self.done_sessions = 0
        self.done_evals = 0
        self.total_sessions, self.total_evals = total_sessions, total_evals

        def on_session(user: str, period: int, session: int) -> None:
            self.done_sessions += 1
            self._update()

        def on_eval(user: str, period: int) -> None:
            self.done_evals += 1
            self._update()

        events.on_session = on_session
        events.on_eval = on_eval
        try:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        except RuntimeError:
            self._ticker = None  # attached outside an event loop (tests): updates come from the hooks only

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self._update(heartbeat=True)

    def _info(self) -> str:
        return "" if self._ledger is None else ledger_info(self._ledger, self.stall_seconds)

    def _update(self, heartbeat: bool = False) -> None:
        if self._progress is not None:
            self._progress.update(self._sessions, completed=self.done_sessions, info=self._info())
            self._progress.update(self._evals, completed=self.done_evals)
            return
        now = time.monotonic()
        if heartbeat:
            self._log_stall(now)  # plain logs only speak up between events when something is stuck
            return
        total = self.total_sessions + self.total_evals
        if self._plain.progress_due(self.done_sessions + self.done_evals, total, now):
            self.console.print(f"sessions {self.done_sessions}/{self.total_sessions}, evaluations "
                               f"{self.done_evals}/{self.total_evals}; {self._info()}", highlight=False)

    def _log_stall(self, now: float) -> None:
        """A line about calls waiting past the stall threshold, at most once per ``LOG_EVERY_SECONDS``."""
        stall = self._plain.stall_line(self._ledger, self.stall_seconds, now) if self._ledger else ""
        if stall:
            self.console.print(f"still waiting: {stall}; sessions {self.done_sessions}/{self.total_sessions}, "
                               f"evaluations {self.done_evals}/{self.total_evals}", highlight=False)

    def close(self) -> None:
        """Stop the live display and its refresh timer."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._progress is not None:
            self._progress.stop()
