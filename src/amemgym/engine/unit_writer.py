"""Every write of one unit into its run directory: the records a family hands over, in the order it hands them.

A family never opens a file of the run directory: it gets a :class:`UnitWriter` for its unit's folder and
passes records to it by name (``sessions.jsonl``, ``snapshots/period_00.json``). The writer owns the paths
(a name is a relative path that stays inside the unit's folder), the atomic replace of whole files, the
fsynced appends of JSONL lines, and the *commit order*.

Commit order is what makes a unit resumable after a kill at any instant: a record lands before the
checkpoint that points past it, so the newest checkpoint on disk never claims a step whose record is not
there. :meth:`UnitWriter.append` and :meth:`UnitWriter.put` only queue; one drainer task runs the queued
writes in a worker thread, strictly in queue order, taking everything queued so far in one thread hop (the
hop costs the event loop more than the write), so the family's conversation never waits on an fsync. A
write that fails stops the queue: nothing queued after it is written (a checkpoint is never written past a
record that did not land), and the error comes back from the next :meth:`UnitWriter.flush`. A kill before
queued writes land only means resuming from the checkpoint before them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from ..errors import RunError
from ..records import RunFile, parse_record, read_record
from ..storage import append_jsonl, atomic_write_json, atomic_write_text, fsync_dir, read_jsonl
from .journal import JournalFile, fold, saves

__all__ = ["UnitWriter", "check_name"]

M = TypeVar("M", bound=RunFile)

#: What the queue holds: a write to run in the drainer's thread, or a flush waiting for the writes before it.
_Item = Callable[[], None] | asyncio.Future[None]


def check_name(name: str) -> str:
    """``name`` when it is a relative POSIX path of plain parts (no ``..``, ``.``, empty part or backslash).

    Raises:
        RunError: the name could point outside the folder it is meant for.
    """
    parts = name.split("/")
    if (not name or "\\" in name or "\x00" in name or PurePosixPath(name).is_absolute()
            or any(p in ("", ".", "..") for p in parts)):
        raise RunError(f"{name!r} is not a file name inside a unit's folder")
    return name


def _run_all(writes: list[Callable[[], None]]) -> None:
    for write in writes:
        write()


class UnitWriter:
    """The writes of the unit whose folder is ``unit`` under the run directory ``root``.

    Args:
        root: the run directory.
        unit: the unit's folder relative to ``root`` (``users/alice``); ``.`` for a run of one unit.
    """

    def __init__(self, root: Path, unit: str = ".") -> None:
        self.root = Path(root)
        self.unit = unit
        self.dir = self.root if unit == "." else self.root / check_name(unit)
        self._queue: list[_Item] = []
        self._drainer: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._journals: dict[str, JournalFile] = {}

    def path(self, name: str) -> Path:
        """Where the unit's file ``name`` lives (for readers and messages; writes go through this writer)."""
        return self.dir / check_name(name)

    def exists(self, name: str) -> bool:
        """Whether the unit's file ``name`` is on disk (queued writes not yet landed do not count)."""
        return self.path(name).exists()

    def read(self, name: str, model: type[M]) -> M | None:
        """The unit's record ``name`` parsed as ``model``; None when the file is not there.

        Raises:
            RunError: the file is unreadable, truncated or not a ``model``.
        """
        path = self.path(name)
        return read_record(path, model) if path.exists() else None

    def read_journal(self, name: str, model: type[M], *, legacy: str | None = None,
                     upto: int | None = None) -> M | None:
        """The record kept in the journal ``name`` (see :mod:`~amemgym.engine.journal`), parsed as ``model``.

        When the journal is not there, the whole-file record ``legacy`` an earlier version wrote in its place
        (None when neither is there). ``upto``: the record as its first ``upto`` saves left it.

        Raises:
            RunError: the journal or the file is unreadable, truncated or not a ``model``.
        """
        path = self.path(name)
        if path.exists():
            return parse_record(fold(path, upto), model, str(path))
        return self.read(legacy, model) if legacy is not None else None

    def journal_saves(self, name: str) -> int:
        """How many saves of the journal ``name`` landed on disk (0 when it is not there)."""
        path = self.path(name)
        return saves(path) if path.exists() else 0

    def lines(self, stream: str) -> Iterator[dict[str, Any]]:
        """The complete lines of the JSONL stream ``stream`` (none when it does not exist)."""
        return read_jsonl(self.path(stream))

    # -- queued writes, in commit order -------------------------------------------------------------------

    def append(self, stream: str, records: list[Mapping[str, Any]]) -> None:
        """Queue appending ``records`` as lines of the JSONL stream ``stream`` (fsynced)."""
        path, payload = self.path(stream), [dict(r) for r in records]
        self._push(lambda: append_jsonl(path, payload))

    def put(self, name: str, record: Any, *, compact: bool = False) -> None:
        """Queue replacing the file ``name`` with ``record`` as JSON, atomically (``compact``: one line).

        ``record`` must not change after this call (pass a copy the caller no longer touches).
        """
        path = self.path(name)
        self._push(lambda: atomic_write_json(path, record, compact=compact))

    def put_journal(self, name: str, record: Any, *, replaces: str | None = None) -> None:
        """Queue saving ``record`` into the journal ``name``: only what changed since this writer's last save
        is appended (fsynced); the first save, and one that would let the file outgrow twice the record,
        rewrite it atomically as the whole record. Read it back with :meth:`read_journal`.

        ``replaces``: the whole-file record an earlier version kept instead; it is removed once the journal
        holds the whole record (until then a reader finds the journal first anyway).
        ``record`` must not change after this call.
        """
        journal = self._journals.get(name)
        if journal is None:
            journal = self._journals[name] = JournalFile(self.path(name))
        old = self.path(replaces) if replaces is not None else None

        def save() -> None:
            if journal.save(record) and old is not None and old.exists():
                old.unlink()
                fsync_dir(old.parent)

        self._push(save)

    def put_text(self, name: str, text: str) -> None:
        """Queue replacing the file ``name`` with ``text``, atomically."""
        path = self.path(name)
        self._push(lambda: atomic_write_text(path, text))

    def put_now(self, name: str, record: Any, *, compact: bool = False) -> None:
        """Replace ``name`` with ``record`` right now, on this thread, with no await before it lands.

        For files written outside a unit's queued play, from code that may have no event loop (a run's root
        files: manifest, metrics, failures; a report page). Nothing may be queued: flush first.

        Raises:
            RunError: writes are still queued (this one would land before them, out of order).
        """
        self._check_idle(name)
        atomic_write_json(self.path(name), record, compact=compact)

    def append_now(self, stream: str, records: list[Mapping[str, Any]]) -> None:
        """Append ``records`` to the JSONL stream ``stream`` right now (as :meth:`put_now`, for lines).

        Raises:
            RunError: writes are still queued.
        """
        self._check_idle(stream)
        append_jsonl(self.path(stream), [dict(r) for r in records])

    def put_text_now(self, name: str, text: str) -> None:
        """Replace ``name`` with ``text`` right now, atomically (as :meth:`put_now`, for a text file).

        Raises:
            RunError: writes are still queued.
        """
        self._check_idle(name)
        atomic_write_text(self.path(name), text)

    def set_aside_now(self, name: str, new_name: str) -> None:
        """Rename the unit's file ``name`` to ``new_name`` right now (replacing an older one of that name), so a
        damaged file is kept for inspection without being read again. Nothing happens when ``name`` is absent.

        Raises:
            RunError: writes are still queued.
        """
        self._check_idle(name)
        source = self.path(name)
        if source.exists() or source.is_symlink():
            source.replace(self.path(new_name))
            fsync_dir(self.dir)

    def _check_idle(self, name: str) -> None:
        """Refuse a direct write while queued writes could land after it."""
        if self._queue or (self._drainer is not None and not self._drainer.done()):
            raise RunError(f"{self.dir}: {name} written while earlier writes are still queued; flush first")
        if self._error is not None:
            raise self._error

    async def flush(self) -> None:
        """Wait until every write queued before this call has landed.

        Raises:
            OSError, RunError: a queued write failed (it and everything queued after it were not written).
        """
        if self._error is not None:
            raise self._error
        if not self._queue and (self._drainer is None or self._drainer.done()):
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._push(done)
        await asyncio.shield(done)

    def _push(self, item: _Item) -> None:
        if self._error is not None:
            if isinstance(item, asyncio.Future):
                item.set_exception(self._error)
            return  # nothing lands after a failed write
        self._queue.append(item)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
            self._drainer.add_done_callback(self._drained)

    def _drained(self, task: asyncio.Task[None]) -> None:
        """A drain cancelled before its first step ran none of its code: end the queue here instead."""
        if task.cancelled() and self._error is None:
            self._fail(RunError(f"{self.dir}: writes cancelled"))

    def _fail(self, error: BaseException) -> None:
        self._error = error
        for item in self._queue:
            if isinstance(item, asyncio.Future) and not item.done():
                item.set_exception(error)
        self._queue = []

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            writes = [i for i in batch if not isinstance(i, asyncio.Future)]
            try:
                if writes:
                    await asyncio.to_thread(_run_all, writes)
            except BaseException as exc:
                # A write that failed (or a cancelled drain) ends the queue: later writes would break the order.
                self._queue = [*batch, *self._queue]
                self._fail(exc if isinstance(exc, Exception) else RunError(f"{self.dir}: writes cancelled"))
                if not isinstance(exc, Exception):
                    raise
                return
            for item in batch:
                if isinstance(item, asyncio.Future) and not item.done():
                    item.set_result(None)
