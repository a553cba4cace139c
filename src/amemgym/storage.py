"""Crash-safe file writes: atomic replace for whole files, recoverable appends for JSONL.

Every file amemgym writes goes through here, so a process killed at any instant leaves either the
old content or the new one, never a truncated mix. A file a user names as a reader command's output
(:func:`write_output_text`) is written where the name leads: through a symbolic link (the link stays), and
straight into a character device, FIFO or socket (``--out-csv /dev/stdout``), since a rename would put a
regular file in the node's place; a run's own files are always replaced by rename, so a link planted in a
run directory is replaced, never followed. Text that cannot be encoded as UTF-8 is refused as a
:class:`RunError` naming the file. Every text written here is also scrubbed of API keys
(:func:`amemgym.redact.redact_content`): a server that echoes the key in a reply or a model name must not put
it into a run file, a trace or a report.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import RunError
from .redact import redact_content


def fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (a no-op where a folder cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()


#: The names of the temp files of :func:`atomic_write_bytes` (``.NAME.XXXXXXXX.tmp``) and of the write probe of
#: ``engine.rundir.prepare_out_dir``: what a process killed mid-write leaves behind.
_STALE = re.compile(r"^\.(?:.+\.[a-z0-9_]{8}\.tmp|write-check\.[a-z0-9_]{8})$")


def remove_stale_temps(root: Path) -> int:
    """Delete the temp files killed writers left under ``root``; returns how many.

    Call it only while holding ``root``'s run lock: then no other process can be writing one right now.
    """
    removed = 0
    for folder, _, files in os.walk(root):
        for name in files:
            if _STALE.match(name):
                try:
                    os.unlink(os.path.join(folder, name))
                    removed += 1
                except FileNotFoundError:
                    pass
    return removed


def _write_target(path: Path) -> tuple[Path, bool]:
    """Where a write to ``path`` lands, and whether it must go straight into it rather than through a rename.

    A symbolic link is followed: renaming onto it would replace the link, not the file it points to. A
    character device, FIFO or socket is a stream with no content to replace, so it is written into; so is a
    file that its link names only through the kernel (``/proc/self/fd/1`` of a deleted file), which no rename
    can reach. A missing path, a regular file and a directory (which then fails as before) take the rename.

    Raises:
        RunError: ``path`` is a block device (writing would overwrite a disk, renaming would remove the node).
        OSError: ``path`` is a link loop, or cannot be examined.
    """
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISBLK(st.st_mode):
        raise RunError(f"{path}: a block device; write the output to a file")
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return path, True
    if not os.path.islink(path):
        return path, False
    real = Path(os.path.realpath(path))
    if st is None:
        return real, False  # a dangling link: the write creates the file it names
    try:
        same = os.path.samestat(st, os.stat(real))
    except OSError:
        same = False
    return (real, False) if same else (path, True)


def _write_into(path: Path, data: bytes) -> None:
    """Write ``data`` into ``path`` as it stands (a device, a pipe, ``/dev/stdout``): no temp file, no rename.

    A FIFO without a reader blocks here until one opens it, as it does for any program writing to one.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as fh:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fh.truncate(0)  # a file reached through a /proc link: its old content must not outlast the new
        fh.write(data)
        fh.flush()


# Names of this process's own open descriptors. ``--out-csv /dev/stdout > board.txt`` must add to what the
# shell opened, at its current offset: opening the name anew would start at offset 0 over the lines already
# printed, and a rename would swap the file away from under the shell's descriptor.
_OWN_FD = re.compile(r"/dev/(?:(?P<std>stdout|stderr)|fd/(?P<fd>\d+))|/proc/self/fd/(?P<proc>\d+)")


def _own_descriptor(path: Path) -> int | None:
    """The descriptor number ``path`` names (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``), or None."""
    m = _OWN_FD.fullmatch(str(path))
    if m is None:
        return None
    if m["std"]:
        return 1 if m["std"] == "stdout" else 2
    return int(m["fd"] or m["proc"])


def _write_descriptor(fd: int, data: bytes) -> None:
    """Write ``data`` to the open descriptor ``fd`` at its own offset, after what Python has buffered for it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.fileno() == fd:
                stream.flush()
        except (OSError, ValueError):  # a stream without a descriptor (captured output) or closed
            pass
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_output_text(path: Path, text: str) -> None:
    """Write ``text`` (keys masked) to ``path``, a file the user named as a command's output: atomically to a
    file, through a symbolic link, straight into a device, FIFO or socket (see :func:`_write_target`), and
    into an open descriptor of this process at its offset (``/dev/stdout``, see :func:`_own_descriptor`)."""
    path = Path(path)
    data = _encoded(path, redact_content(text))
    fd = _own_descriptor(path)
    if fd is not None and os.path.exists(path):
        _write_descriptor(fd, data)
        return
    target, stream = _write_target(path)
    if stream:
        _write_into(target, data)
    else:
        atomic_write_bytes(target, data)


def write_output_json(path: Path, obj: Any) -> None:
    """:func:`write_output_text` of ``obj`` as indented JSON."""
    write_output_text(path, dumps(obj))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync and rename (a symbolic link at
    ``path`` is replaced, not followed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; results should get the usual permissions of the user's umask.
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def _encoded(path: Path, text: str) -> bytes:
    """``text`` as UTF-8.

    Raises:
        RunError: ``text`` holds a lone surrogate. Text from outside is cleaned where it enters
            (:mod:`amemgym.textclean`); this names the file should any still get through.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RunError(f"{path}: cannot write text holding the lone surrogate {text[exc.start]!a} as UTF-8 "
                       f"(at character {exc.start}); nothing was written") from None


def atomic_write_text(path: Path, text: str) -> None:
    """Atomically write UTF-8 text, with any API key in it masked."""
    atomic_write_bytes(path, _encoded(path, redact_content(text)))


def dumps(obj: Any) -> str:
    """Canonical pretty JSON used for every JSON file we write (stable key order given by the data)."""
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


def atomic_write_json(path: Path, obj: Any, *, compact: bool = False) -> None:
    """Atomically write ``obj`` as pretty JSON (``compact``: one line, for large machine-only checkpoints).

    Pretty printing runs json's pure-Python encoder, several times slower than the compact C one; a
    checkpoint rewritten after every session with a growing conversation should not pay for it.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n" if compact else dumps(obj)
    atomic_write_text(path, text)


def append_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """Append records as JSON lines and fsync.

    A kill mid-append can leave a partial last line; :func:`read_jsonl` drops it, and the next append
    cuts it off first, so a torn line never ends up in the middle of the file.
    """
    append_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (whole lines, with any API key in it masked) and fsync; see :func:`append_jsonl`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = _encoded(path, redact_content(text))
    with open(path, "a+b") as fh:
        end = fh.seek(0, os.SEEK_END)
        keep = _complete_length(fh, end)
        if keep < end:
            fh.truncate(keep)  # the torn line of a killed append: it never landed
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())


def _complete_length(fh: Any, end: int) -> int:
    """The length of the file's whole lines: ``end`` less a last line without its newline."""
    if end == 0:
        return 0
    fh.seek(end - 1)
    if fh.read(1) == b"\n":  # the usual case: the last append completed
        return end
    pos = end
    while pos > 0:
        start = max(0, pos - 65536)
        fh.seek(start)
        block = fh.read(pos - start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        pos = start
    return 0


def require_regular_file(path: Path) -> None:
    """Refuse a run file that is a device, a pipe or a socket (following symlinks): opening or reading one could
    block for ever or never end. A missing path is left to the caller's own error.

    Raises:
        RunError: ``path`` exists and is not a regular file or a directory.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise RunError(f"{path}: not a regular file (a device, pipe or socket); a run file must be a file")


def read_jsonl(path: Path, *, whole: bool = False) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSONL file; a last line without its newline (a killed append) is dropped, unless
    ``whole`` says the file's writer has finished, so that such a line can only be damage.

    Raises:
        RunError: a complete line is not JSON, or the file is not UTF-8 (naming the file and line): that
            is damage, not a kill, since an append never leaves a torn line before others; with ``whole``,
            also a last line cut short.
    """
    path = Path(path)
    if not path.exists():
        return
    require_regular_file(path)
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                if whole:
                    raise RunError(f"{path}: the last line is cut short, though what wrote the file has finished; "
                                   "the file is damaged")
                break
            if not raw.strip():
                continue
            try:
                yield json.loads(raw)
            except (ValueError, RecursionError):
                raise RunError(f"{path} line {n}: damaged (a complete line that is not JSON)") from None
