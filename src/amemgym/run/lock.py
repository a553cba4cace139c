"""One writer per run directory: an exclusive OS-level lock held for the whole of a writing command.

The lock is ``flock`` on ``DIR/.amemgym.lock``. The kernel releases it when its holder exits for any
reason (SIGKILL included), so a lock left by a dead process is simply taken by the next writer; nothing
has to guess whether a recorded pid is still alive. The file also says who holds it (pid, host, command,
start time) so a refused writer can name the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import RunError
from .layout import prepare_out_dir

LOCK_NAME = ".amemgym.lock"


def _holder(path: Path) -> str:
    try:
        info: Any = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    host = "" if info.get("host") == socket.gethostname() else f" on {info.get('host')}"
    return f"pid {info.get('pid')}{host} ({info.get('command', '?')}, since {info.get('since', '?')})"


@contextlib.contextmanager
def run_lock(directory: Path, command: str) -> Iterator[Path]:
    """Hold the writer lock of ``directory`` (created if missing) for the body of the ``with``.

    Raises:
        RunError: (exit 2) when another live process holds it; the message names that process.
    """
    directory = Path(directory)
    prepare_out_dir(directory)  # a file, a dangling link or a read-only place: one line saying which
    try:
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunError(f"{directory}: cannot create the run directory's lock file: {exc.strerror or exc}") from None
    path = directory / LOCK_NAME
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(f"{directory}: in use by {_holder(path)}; wait for it to finish or use another "
                           "directory") from None
        except OSError as exc:
            raise RunError(f"{directory}: cannot lock the run directory: {exc.strerror or exc}") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                "argv": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:300],
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        # Rewritten in place (not renamed): the lock belongs to this inode, which every writer opens.
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock
