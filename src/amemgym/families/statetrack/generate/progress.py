"""Live progress of LLM generation: a bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ....console import new_console
from ....llm.usage import UsageLedger
from ..progress import stall_text


class GenerationProgress:
    """Counts finished (user, stage) steps, with tokens, cache hits and failures so far."""

    def __init__(self, users: int, stages: int, ledger: UsageLedger, console: Console | None = None) -> None:
        self.console = console or new_console(stderr=True)
        self.ledger = ledger
        self.total = users * stages
        self.done = 0
        self.failed = 0
        self._bar: Progress | None = None
        if sys.stderr.isatty():
            self._bar = Progress(TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.fields[info]}"), console=self.console)
            self._task = self._bar.add_task("steps", total=self.total, info="")
            self._bar.start()

    def __call__(self, user_id: str, stage: str, status: str) -> None:
        """The pipeline's callback: ``status`` is start, done, resumed or failed."""
        if status in ("done", "resumed"):
            self.done += 1
        elif status == "failed":
            self.failed += 1
        else:
            return
        t = self.ledger.totals()
        stall = stall_text(self.ledger)
        info = (f"calls {t.calls} cached {t.cache_hits} tokens {t.prompt_tokens}+{t.completion_tokens} "
                f"failed users {self.failed}" + (f"; {stall}" if stall else ""))
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, info=info)
        else:
            self.console.print(f"{user_id[:8]} {stage}: {status} ({self.done}/{self.total} steps; {info})",
                               highlight=False, markup=False)

    def close(self) -> None:
        """Stop the bar."""
        if self._bar is not None:
            self._bar.stop()
