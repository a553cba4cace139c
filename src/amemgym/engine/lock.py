"""One writer per run directory, and no run inside (or around) another run's directory while it is written.

The lock is a :mod:`filelock` lock on ``DIR/.amemgym.lock`` (``flock`` on Unix), held for the whole of a
writing command. The operating system releases it when its holder exits for any reason (SIGKILL included),
so a lock left by a dead process is simply taken by the next writer. The file also says who holds it (pid,
host, command, start time) so that a refused writer can name the holder.

Nested directories are refused too: a run into ``O/s2`` while ``O`` is being written (or into ``O`` while
``O/s2`` is) would interleave two runs' files, and each would later read the other's as its own. After
taking its own lock a writer looks for lock files in every folder above its directory and below it, and
refuses if one of them is held. Both writers take their own lock before they look, so of two nested writers
starting together at least one sees the other. Locks this process holds itself (``--trials`` holds ``OUT``
while each trial holds ``OUT/trial_k``) are known from a registry and never count against it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..errors import RunError
from ..redact import MASK, redact
from ..runfiles import LOCK, MANIFEST
from .rundir import prepare_out_dir

#: How long a look at another directory's lock waits: long enough to outlast another writer's own brief look
#: at the same file, far shorter than any real holder keeps it.
_PROBE_WAIT_S = 0.3

#: The lock files this process holds now (resolved paths).
_HELD: set[Path] = set()


def _holder(path: Path) -> str:
    try:
        info: Any = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    host = "" if info.get("host") == socket.gethostname() else f" on {info.get('host')}"
    return f"pid {info.get('pid')}{host} ({info.get('command', '?')}, since {info.get('since', '?')})"


def _held_elsewhere(path: Path) -> bool:
    """Whether another process holds the lock file ``path`` (checked by trying to take it for a moment)."""
    if path in _HELD or not path.is_file():
        return False
    probe = FileLock(str(path), timeout=_PROBE_WAIT_S, thread_local=False)
    try:
        probe.acquire()
    except Timeout:
        return True
    except OSError:
        return False  # unreadable or gone: nothing we could be writing over
    probe.release()
    return False


def _nested_holder(directory: Path) -> tuple[Path, str] | None:
    """A held lock in a folder above ``directory`` or below it: that folder, and who holds it."""
    for parent in directory.parents:
        if _held_elsewhere(parent / LOCK):
            return parent, "inside"
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        if MANIFEST in files and "users" in dirs:
            dirs.remove("users")  # a run's per-user folders (thousands of them) hold no run of their own
        if LOCK in files and Path(root) != directory and _held_elsewhere(Path(root) / LOCK):
            return Path(root), "around"
    return None


def _refuse_nested(directory: Path, shown: Path) -> None:
    found = _nested_holder(directory)
    if found is None:
        return
    other, where = found
    holder = _holder(other / LOCK)
    if where == "inside":
        raise RunError(f"{shown}: inside {other}, which is in use by {holder}; one run's directory cannot hold "
                       "another's, so wait for it to finish or use a directory outside it")
    raise RunError(f"{shown}: holds {other}, which is in use by {holder}; one run's directory cannot hold "
                   "another's, so wait for it to finish or use a directory outside it")


#: A URL's query string or fragment, where some services take a key.
_URL_TAIL = re.compile(r"(://[^\s?#]*)[?#]\S*")


def shown_argv() -> str:
    """The command line as the lock file shows it: the program's name, then the arguments without URL query
    strings or anything shaped like a key (a ``--set`` may carry either)."""
    argv = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    return redact(_URL_TAIL.sub(rf"\1?{MASK}", argv))[:300]


def _write_holder(path: Path, command: str) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command, "argv": shown_argv(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # Rewritten in place (not renamed): the lock belongs to this inode, which every writer opens.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
    finally:
        os.close(fd)


@contextlib.contextmanager
def run_lock(directory: Path, command: str) -> Iterator[Path]:
    """Hold the writer lock of ``directory`` (created if missing) for the body of the ``with``.

    Raises:
        RunError: (exit 2) when another live process holds it, or holds a lock in a folder above or below it;
            the message names that process.
    """
    shown = Path(directory)
    real = shown.resolve()
    _refuse_nested(real, shown)  # before creating anything: a refused run leaves no folder behind
    created = not shown.exists()
    prepare_out_dir(shown)  # a file, a dangling link or a read-only place: one line saying which
    path = real / LOCK
    lock = FileLock(str(path), timeout=_PROBE_WAIT_S, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise RunError(f"{shown}: in use by {_holder(path)}; wait for it to finish or use another "
                       "directory") from None
    except OSError as exc:
        raise RunError(f"{shown}: cannot lock the run directory: {exc.strerror or exc}") from None
    _HELD.add(path)
    try:
        try:
            _refuse_nested(real, shown)  # again, now that ours is held: a writer starting meanwhile is seen
            _write_holder(path, command)
            yield path
        except BaseException:
            # Refused before anything but the lock was written (a writer nested meanwhile, or bad input found
            # under the lock): a folder this call created goes again.
            with contextlib.suppress(OSError):
                if created and {p.name for p in real.iterdir()} == {LOCK}:
                    _HELD.discard(path)
                    lock.release()
                    path.unlink()
                    real.rmdir()
            raise
    finally:
        _HELD.discard(path)
        if lock.is_locked:
            lock.release()
