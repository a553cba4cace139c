"""Pieces every CLI command shares: its two consoles (``out``, ``err``), the error wrapper, common options."""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from .config import LLMConfig
from .console import new_console, scrubbed_output
from .errors import AMemGymError, ConfigError
from .llm.client import register_keys
from .redact import redact
from .runfiles import MANIFEST, READER_FILES, ROOT_FILES

out = new_console()
err = new_console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

#: Longest error line printed; a message quoting a huge input value is cut rather than flooding the terminal.
MAX_ERROR_CHARS = 1000

ConfigOpt = Annotated[str | None, typer.Option("--config", "-c", help="Preset (tiny, small, v1.base, v1.extra, "
                                                "large) or a YAML/JSON config file.")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="Override any config field: KEY.PATH=VALUE "
                                                 "(e.g. llm.default.max_concurrency=4). Repeatable.")]


def one_line(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``message`` as a single line: control characters escaped, whitespace runs collapsed, length capped."""
    text = " ".join(message.split())
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return text


def handled(fn: F) -> F:
    """Run a command; an amemgym error becomes one clear line and its exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with scrubbed_output():
            return _run(fn, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with every error of :func:`handled` made one line and an exit code."""
    # A command that makes no client (report, export, check-agent) still hides the default endpoint's key: an
    # environment file or a plug-in's code may hold it.
    try:
        register_keys(LLMConfig())
        return fn(*args, **kwargs)
    except AMemGymError as exc:
        # soft_wrap: a long message stays one line instead of being wrapped at the terminal width.
        err.print(f"error: {one_line(redact(str(exc)))}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except OSError as exc:
        # A full disk, a vanished mount, a permission change mid-run: finished work is on disk already.
        name = errno.errorcode.get(exc.errno or 0, "I/O error")
        # A failed rename of an atomic write names its temp file first and the target second.
        target = exc.filename2 or exc.filename
        where = f" ({target})" if target else ""
        err.print(f"error: {name}: {one_line(exc.strerror or str(exc))}{where}; fix it and re-run the same "
                  "command to resume", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except RecursionError:
        err.print("error: an input is nested too deeply to be read", highlight=False)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("interrupted; re-run the same command to resume", highlight=False)
        raise typer.Exit(130) from None


def check_output(path: Path | None, flag: str) -> None:
    """Refuse an output path of a reader command that would overwrite a file of a run directory: a run's own
    records (an existing file anywhere in it, or one of its root files) are written by the run alone. Also
    refused before any work: a directory or a block device (no file can be written there). A character
    device, FIFO or socket (``/dev/stdout``) is accepted; :mod:`amemgym.storage` writes straight into it.

    Raises:
        ConfigError: ``path`` lies in a run directory (a folder above it holds ``manifest.json``) and is one of
            its files, or is a directory or a block device.
    """
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0  # missing (the write creates it) or unreadable (the write then says why)
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{flag} {path}: a directory; name a file to write")
    if stat.S_ISBLK(mode):
        raise ConfigError(f"{flag} {path}: a block device; name a file to write")
    target = Path(path).resolve()
    run = next((folder for folder in target.parents if (folder / MANIFEST).is_file()), None)
    if run is None or target.name in READER_FILES:
        return
    if target.exists() or (target.parent == run and target.name in ROOT_FILES):
        raise ConfigError(f"{flag} {path}: a file of the run directory {run}; write the output elsewhere")


ModelOpt = Annotated[str | None, typer.Option("--model", help="Model of the assistant under test (role agent; "
                                              "memory writes follow it unless configured apart).")]
UserModelOpt = Annotated[str | None, typer.Option("--user-model", help="Model of the simulated user "
                                                  "(role simulator).")]
JudgeModelOpt = Annotated[str | None, typer.Option("--judge-model", help="Model of the judge role (evolve's "
                                                   "recall judge; on a budget-family run, the second verdict "
                                                   "on rule failures; refused where no judge is called).")]
MaxConnectionsOpt = Annotated[int | None, typer.Option("--max-connections", min=1, help="Calls in flight at once "
                                                       "per endpoint, for every role.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Run only the first N users of the "
                                              "environment.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache in this "
                                          "invocation: every call reaches the model.")]
AllowModelChangeOpt = Annotated[bool, typer.Option("--allow-model-change", help="Resume although a role's model "
                                                   "changed; each session records its model.")]
