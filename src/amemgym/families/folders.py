"""Folders of environment files: which files a folder holds, in a documented order, and their one family.

A folder given as ``--env`` holds its episodes as ``data.json`` files at any depth up to :data:`MAX_DEPTH`
(``generate --family budget --official`` writes ``OUT/<domain>/seed<N>/data.json``). The order is the
*natural* order of their folder paths: path parts compared left to right, runs of digits as numbers, so
``seed2`` comes before ``seed10``. ``--limit N`` takes the first N in this order.
"""

from __future__ import annotations

import re
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
        DataError: when the folder holds none, or holds one at its top level and others below it (their
            run folders would nest inside each other).
    """
    found = [p for depth in range(MAX_DEPTH + 1)
             for p in folder.glob("/".join(["*"] * depth + [EPISODE_FILE])) if p.is_file()]
    if not found:
        raise DataError(f"{folder}: no environment file ({EPISODE_FILE}) here or up to {MAX_DEPTH} levels below")
    top = folder / EPISODE_FILE
    if top in found and len(found) > 1:
        raise DataError(f"{folder}: holds an episode at its top level and {len(found) - 1} below it; give each "
                        "episode its own folder, or pass the top-level file itself")
    return sorted(found, key=lambda p: natural_key(p.parent.relative_to(folder).as_posix()))


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
