"""Child processes amemgym starts to run code it does not control (agent plug-ins): a run's worker processes
and the child that checks or builds a plug-in first. How one ended, ending one that the code keeps alive, and
keeping what the code prints off the command's standard output."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from multiprocessing.process import BaseProcess

from .console import scrub_standard_streams
from .redact import register_secret

__all__ = ["EXIT_SECONDS", "end", "ended_how", "scrub_output", "stdout_to_stderr"]

#: Seconds a child that has answered (or was told to stop) has to end before it is ended: only a thread its
#: agent's code left running keeps it alive past that.
EXIT_SECONDS = 2.0


def ended_how(exitcode: int | None) -> str:
    """A child's exit code in words ("exit code 0", "killed by signal 9")."""
    return f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"


def end(process: BaseProcess) -> None:
    """Wait :data:`EXIT_SECONDS` for ``process`` to end, then end it: no child outlives its use."""
    process.join(EXIT_SECONDS)
    if process.is_alive():
        process.kill()
        process.join()


def stdout_to_stderr() -> None:
    """In a child: send its standard output to standard error at the file descriptor (native code's writes as
    well), so nothing the agent's code prints lands in the command's output (a ``--json`` summary, say)."""
    sys.stdout.flush()
    os.dup2(2, 1)


def scrub_output(keys: Sequence[str]) -> None:
    """In a child: know the parent's keys (``keys``, from :func:`amemgym.redact.registered`; a spawned child starts
    with none) and scrub them out of what its code prints for the rest of its life
    (:func:`~amemgym.console.scrub_standard_streams`)."""
    for key in keys:
        register_secret(key)
    scrub_standard_streams()
