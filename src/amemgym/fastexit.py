"""Leave the process without tearing down every module: the last part of a command's wall time.

After a command has finished, the interpreter's normal shutdown still deallocates every loaded module
and object one by one (numpy, pydantic, the HTTP pool, the run's data). That is pure waste for a CLI, and it
takes a noticeable share of a short run's wall time. ``exit_now`` does what matters at exit (the atexit
handlers, e.g. stopping the embedded model server, and flushing the standard streams) and then ends the
process at once. It falls back to the normal exit whenever another thread is still alive, since such a
thread may still be writing something.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def exit_code(code: object) -> int:
    """The process exit status ``sys.exit(code)`` would give (a message means 1, as Python prints it)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def exit_now(code: object) -> None:
    """End the process with ``code`` after atexit handlers and a stream flush; returns if it must not."""
    if threading.active_count() > 1 or os.environ.get("AMEMGYM_SLOW_EXIT"):
        return
    status = exit_code(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # A closed or broken pipe: the normal exit would report it; let it.
            return
    os._exit(status)
