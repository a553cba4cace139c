"""Live progress for runs: a rich display on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..llm.usage import UsageLedger


class RunProgress:
    """Counts sessions and evaluated periods, with tokens, cache hits and errors so far."""

    def __init__(self, console: Console | None = None, *, live: bool | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.live = sys.stderr.isatty() if live is None else live
        self._progress: Progress | None = None
        self._ledger: UsageLedger | None = None
        self._last_log = 0.0

    def attach(self, events: Any, users: list[Any], ledger: UsageLedger) -> None:
        """Wire the episode hooks to the display."""
        self._ledger = ledger
        total_sessions = sum(len(p.sessions) for u in users for p in u.periods)
        total_evals = sum(len(u.periods) for u in users)
        if self.live:
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

    def _info(self) -> str:
        if self._ledger is None:
            return ""
        t = self._ledger.totals()
        # Each endpoint's adaptive concurrency limit (it falls on 429/5xx/slow replies), next to what is in flight.
        limits = "/".join(str(lim.limit) for lim in self._ledger.limiters.values())
        cap = f" limit {limits}" if limits else ""
        return (f"calls {t.calls} (in flight {self._ledger.in_flight}{cap}) cached {t.cache_hits} "
                f"tokens {t.prompt_tokens}+{t.completion_tokens} errors {t.failures}")

    def _update(self) -> None:
        if self._progress is not None:
            self._progress.update(self._sessions, completed=self.done_sessions, info=self._info())
            self._progress.update(self._evals, completed=self.done_evals)
            return
        now = time.monotonic()
        if now - self._last_log >= 5 or self.done_evals == self.total_evals:
            self._last_log = now
            self.console.print(f"sessions {self.done_sessions}/{self.total_sessions}, evaluations "
                               f"{self.done_evals}/{self.total_evals}; {self._info()}", highlight=False)

    def close(self) -> None:
        """Stop the live display."""
        if self._progress is not None:
            self._progress.stop()
