"""``--limit``: a statetrack environment cut to its first users, and how a run records and finds its cut."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ...errors import AMemGymError, ConfigError
from .data.io import environment_sha256, load_environment
from .data.model import Environment

__all__ = ["cut_as_recorded", "environment_cut", "first_users", "recorded_environment"]


def first_users(env: Environment, limit: int | None) -> Environment:
    """The environment cut to its first ``limit`` users (all of them when None).

    The cut environment has its own hash, so a resumed run cannot silently mix a limited and a full run.
    """
    if limit is None:
        return env
    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    return env.model_copy(update={"users": env.users[:limit]})


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def environment_cut(path: Path, limit: int | None) -> dict[str, Any] | None:
    """What a run's manifest records of its ``--limit`` cut of the file at ``path`` (None without a limit).

    The protocol's ``environment_sha256`` is the cut's hash; this keeps the file's own sha256 beside it, so a
    reader can recognise the file it was cut from without parsing all of it (``records.manifest.EnvironmentCut``).
    """
    if limit is None:
        return None
    return {"file_sha256": file_sha256(path), "limit": limit}


def cut_as_recorded(path: Path, run_sha256: str, cut: dict[str, Any] | None,
                    run_users: int) -> tuple[Environment | None, str]:
    """The environment at ``path`` cut as the run cut it, or None with why it is not the run's environment.

    A ``--limit`` run's file matches when its bytes are the recorded ``file_sha256`` (only its first
    ``limit`` users are read), or when its first ``limit`` users hash to the run's environment (the file was
    edited after the run, outside the cut). Any other run's file matches when it hashes to the run's
    environment; a run written before cuts were recorded may also have played the file's first ``run_users``
    users.

    Raises:
        DataError: the file does not load.
    """
    if cut:
        limit = int(cut["limit"])
        part = load_environment(path, limit=limit)
        if file_sha256(path) == cut.get("file_sha256") or environment_sha256(part) == run_sha256:
            return part, ""
        return None, f"different sha256, and its first {limit} users differ from the run's"
    whole = load_environment(path)
    if environment_sha256(whole) == run_sha256:
        return whole, ""
    if 0 < run_users < len(whole.users) and environment_sha256(first_users(whole, run_users)) == run_sha256:
        return first_users(whole, run_users), ""
    return None, "different sha256"


def recorded_environment(manifest: dict[str, Any], override: Path | None = None
                         ) -> tuple[Environment | None, str | None]:
    """The environment a run's ``manifest`` was made on, or None with the reason it is not available.

    The file the manifest names (or ``override``) is used only when it is the run's environment: its hash
    matches the run's, or, for a ``--limit`` run, it is the file the run was cut from, cut the same way
    (:func:`cut_as_recorded`).
    """
    name = override or manifest.get("environment_file")
    if not name:
        return None, "the run's manifest names no environment file"
    path = Path(name)
    if not path.exists():
        return None, f"environment file {path} not found"
    run_sha256 = (manifest.get("protocol") or {}).get("environment_sha256")
    try:
        if not run_sha256:
            return load_environment(path), None
        env, why = cut_as_recorded(path, run_sha256, manifest.get("environment_cut"),
                                   len(manifest.get("users") or []))
    except AMemGymError as exc:
        return None, f"environment file unusable: {exc}"
    if env is None:
        return None, f"environment file {path} does not match the run ({why})"
    return env, None
