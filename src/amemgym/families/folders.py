"""Folders of environment files: which files a folder holds, in a documented order, and their one family.

A folder given as ``--env`` holds its episodes as ``data.json`` files at any depth up to :data:`MAX_DEPTH`
(``generate --family budget --official`` writes ``OUT/<domain>/seed<N>/data.json``). The order is the
*natural* order of their folder paths: path parts compared left to right, runs of digits as numbers, so
``seed2`` comes before ``seed10``. ``--limit N`` takes the first N in this order.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import DataError

#: How many folder levels below the given one are searched for ``data.json`` files.
MAX_DEPTH = 4
#: The file name an episode has inside a folder of episodes.
EPISODE_FILE = "data.json"


def natural_key(rel: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of a relative path: digit runs compare as numbers, everything else as text."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", rel) if part)


def episode_files(folder: Path) -> list[Path]:
    """The ``data.json`` files at or below ``folder`` (up to :data:`MAX_DEPTH` levels), in natural order.

    Raises:
        DataError: when the folder holds none, holds one at its top level and others below it (their run
            folders would nest inside each other), or holds a ``data.json`` that is not a readable regular
            file (a pipe, a device, a dangling link, no read permission): skipping it would run fewer
            episodes than the folder holds without a word.
    """
    # Every entry named data.json counts, dangling links included (a glob for the file itself skips those).
    found = [d / EPISODE_FILE for depth in range(MAX_DEPTH + 1)
             for d in ([folder] if depth == 0 else folder.glob("/".join(["*"] * depth)))
             if d.is_dir() and os.path.lexists(d / EPISODE_FILE)]
    for path in found:
        problem = _unreadable(path)
        if problem:
            raise DataError(f"{path}: {problem}")
    if not found:
        raise DataError(f"{folder}: no environment file ({EPISODE_FILE}) here or up to {MAX_DEPTH} levels below")
    top = folder / EPISODE_FILE
    if top in found and len(found) > 1:
        raise DataError(f"{folder}: holds an episode at its top level and {len(found) - 1} below it; give each "
                        "episode its own folder, or pass the top-level file itself")
    return sorted(found, key=lambda p: natural_key(p.parent.relative_to(folder).as_posix()))


def _unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be read as an episode file, or None."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a folder, pipe or device cannot be an episode file)"
    try:
        with path.open("rb"):  # a regular file opens at once; this is only the permission check
            pass
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


def folder_family(folder: Path, declared: dict[Path, str]) -> str:
    """The one family the files of a folder declare (``declared`` maps each file to its family).

    Raises:
        DataError: when the files declare more than one family.
    """
    names = sorted(set(declared.values()))
    if len(names) > 1:
        examples = "; ".join(f"{next(p for p, n in declared.items() if n == name)}: {name}" for name in names)
        raise DataError(f"{folder}: mixes environment families ({examples}); run each family from its own folder")
    return names[0]
