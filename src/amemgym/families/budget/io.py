"""Reading and writing budget-family data files (the family a file belongs to: ``amemgym.families``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ...errors import DataError
from ...storage import atomic_write_bytes
from .generate import episode_bytes
from .integrity import known_good, mismatch, remember_good
from .model import FAMILY, FORMAT_VERSION, Episode


def save_episode(episode: Episode, path: Path) -> None:
    """Write the episode's canonical bytes atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, episode_bytes(episode))


def load_episode(path: Path, *, verify: bool = True) -> tuple[Episode, bytes]:
    """An episode and its raw bytes.

    With ``verify`` (every command that plays or exports an episode) the file must also be the episode its
    (tier, domain, seed, salt) generate (integrity.py; bytes that passed before under the same generator are
    not regenerated again); ``validate`` loads without it and reports the difference as a failure instead.

    Raises:
        DataError: when the file is missing, not JSON, another family, another format version, malformed, or
            (with ``verify``) not the episode it claims to be.
    """
    try:
        raw = path.read_bytes()
        data = json.loads(raw)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or data.get("family") != FAMILY:
        declared = data.get("family") if isinstance(data, dict) else None
        raise DataError(f"{path}: not a budget-family file (family: {declared!r})")
    if data.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{path}: format_version {data.get('format_version')!r} is not supported "
                        f"(this amemgym reads {FORMAT_VERSION})")
    try:
        episode = Episode.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{path}: {where}: {first['msg']}") from None
    if verify and not known_good(raw):
        problem = mismatch(episode)
        if problem:
            raise DataError(f"{path}: {problem}")
        remember_good(raw)
    return episode, raw
