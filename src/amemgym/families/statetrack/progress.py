"""Live progress of a statetrack run: sessions and evaluations done, read from the files the users write.

A rich display on a terminal, plain log lines otherwise. Whichever process plays a user (this one, a worker
process, a Ray task), its session lines and evaluation files land in the run directory, so the display watches
those (:class:`FileProgress`) instead of hooks inside the episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...console import new_console
from ...engine.progress import (
    LOG_EVERY_SECONDS,
    STALL_SECONDS,
    TICK_SECONDS,
    PlainLog,
    ledger_info,
    poll_forever,
    stall_text,
)
from ...llm.usage import UsageLedger
from .data.model import UserEnv
from .layout import RunDir

if TYPE_CHECKING:
    from rich.console import Console

#: Re-exported: the display of every family counts calls and stalls the same way (``amemgym.engine.progress``).
__all__ = ["LOG_EVERY_SECONDS", "STALL_SECONDS", "TICK_SECONDS", "FileProgress", "RunProgress", "stall_text"]


class Counts(Protocol):
    """What :class:`FileProgress` reports to."""

    def on_session(self, user: str, period: int, session: int) -> None: ...

    def on_eval(self, user: str, period: int) -> None: ...


class FileProgress:
    """Reports the sessions and evaluations users finish, by watching the run directory.

    A session counts when its record line is complete in ``sessions.jsonl``; an evaluation when its file
    exists. Only what appears after the watcher started is reported.
    """

    def __init__(self, rundir: RunDir, users: list[UserEnv], counts: Counts) -> None:
        self.rundir, self.users, self.counts = rundir, users, counts
        self._offsets = dict.fromkeys((u.id for u in users), 0)  # bytes of sessions.jsonl already counted
        for u in users:
            self._new_session_lines(u.id)
        self._evals = {u.id: self._evaluated(u) for u in users}

    def _new_session_lines(self, user_id: str) -> int:
        """Complete lines appended since the last call (the file is append-only; only new bytes are read)."""
        try:
            with self.rundir.sessions(user_id).open("rb") as fh:
                fh.seek(self._offsets[user_id])
                new = fh.read()
        except FileNotFoundError:
            return 0
        complete = new.rfind(b"\n") + 1  # a line still being written is counted on a later poll
        self._offsets[user_id] += complete
        return new.count(b"\n", 0, complete)

    def _evaluated(self, user: UserEnv) -> set[int]:
        return {p for p in range(len(user.periods)) if self.rundir.evaluation(user.id, p).exists()}

    def poll(self) -> None:
        """Report what appeared since the last poll."""
        for user in self.users:
            for _ in range(self._new_session_lines(user.id)):
                self.counts.on_session(user.id, -1, -1)
            done = self._evaluated(user)
            for period in sorted(done - self._evals[user.id]):
                self.counts.on_eval(user.id, period)
            self._evals[user.id] |= done


class RunProgress:
    """Counts sessions and evaluated periods, with tokens, cache hits and errors so far."""

    def __init__(self, console: Console | None = None, *, live: bool | None = None) -> None:
        self.console = console if console is not None else new_console(stderr=True)
        self.live = sys.stderr.isatty() if live is None else live
        self._progress: Progress | None = None
        self._ledger: Callable[[], UsageLedger] | None = None
        self._plain = PlainLog()
        self._ticker: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._files: FileProgress | None = None
        self._users: list[Any] = []
        self._root = Path()
        self.total_sessions = self.total_evals = self.done_sessions = self.done_evals = 0
        self.stall_seconds = STALL_SECONDS

    def watch(self, users: list[Any], root: Path) -> RunProgress:
        """Count the sessions and evaluations of ``users`` in the run directory ``root`` (returns itself)."""
        self.total_sessions = sum(len(p.sessions) for u in users for p in u.periods)
        self.total_evals = sum(len(u.periods) for u in users)
        self._users, self._root = users, Path(root)
        return self

    def start(self, total: int, ledger: UsageLedger | Callable[[], UsageLedger]) -> None:
        """Show the display (``total``, the units to play, is not shown: sessions and evaluations are), counting
        the calls of ``ledger`` (or of the ledger it returns); polls the run directory while the loop runs."""
        self._ledger = ledger if callable(ledger) else (lambda: ledger)
        if self.live:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), console=self.console)
            self._progress.start()
            self._sessions = self._progress.add_task("sessions", total=self.total_sessions, info="")
            self._evals = self._progress.add_task("evaluations", total=self.total_evals, info="")
        self.done_sessions = 0
        self.done_evals = 0
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # started outside an event loop (tests): updates come from on_session and on_eval only
        self._ticker = loop.create_task(self._tick())
        if self._users:
            self._files = FileProgress(RunDir(self._root), self._users, self)
            # A few hundred users' files read every half second would take a share of the loop's thread.
            every = 0.5 if len(self._users) <= 64 else 2.0
            self._poller = loop.create_task(poll_forever(self._files.poll, every))

    def on_session(self, user: str, period: int, session: int) -> None:
        """One more session finished."""
        self.done_sessions += 1
        self._update()

    def on_eval(self, user: str, period: int) -> None:
        """One more period evaluated."""
        self.done_evals += 1
        self._update()

    def unit_done(self) -> None:
        """A user finished or failed (its sessions and evaluations were counted from its files)."""

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self._update(heartbeat=True)

    def _info(self) -> str:
        return "" if self._ledger is None else ledger_info(self._ledger(), self.stall_seconds)

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
        stall = self._plain.stall_line(self._ledger(), self.stall_seconds, now) if self._ledger else ""
        if stall:
            self.console.print(f"still waiting: {stall}; sessions {self.done_sessions}/{self.total_sessions}, "
                               f"evaluations {self.done_evals}/{self.total_evals}", highlight=False)

    def close(self) -> None:
        """Count what the last poll missed, then stop the live display and its timers."""
        for task in (self._ticker, self._poller):
            if task is not None:
                task.cancel()
        self._ticker = self._poller = None
        if self._files is not None:
            with contextlib.suppress(OSError):
                self._files.poll()
            self._files = None
        if self._progress is not None:
            self._progress.stop()
