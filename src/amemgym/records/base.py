"""What every run file shares: a ``format_version``, strict reading, and the migration of older files.

A run directory's files are read only through :func:`read_record` (or :func:`parse_record` for one JSON
line). A file that is missing, truncated, not JSON or of the wrong shape is a :class:`RunError` naming the
file and the first bad field. A file without ``format_version`` was written before run files were
versioned: it is read as format 1 and migrated in memory (nothing on disk changes), with a one-time note on
stderr. A file of any other version is refused.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import RunError
from ..storage import require_regular_file

#: The run-file format this amemgym writes.
RUN_FORMAT_VERSION = 2
#: Files without a ``format_version`` (written by releases before versioning) are this version.
UNVERSIONED = 1

_log = logging.getLogger("amemgym.records")
_noted: set[str] = set()

M = TypeVar("M", bound="RunFile")


class RunFile(BaseModel):
    """Base of every top-level run-file model.

    Unknown keys are kept (a field added within the same format version must not break older readers);
    the fields a reader relies on are typed and required. Validators are built on first use, not at import
    (a run reads none of these files before its first model call; see :func:`amemgym.records.build_models`).
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    format_version: int = RUN_FORMAT_VERSION

    #: A short name for messages ("evaluation", "manifest", ...).
    kind: ClassVar[str] = "run file"

    @classmethod
    def from_unversioned(cls, raw: Any) -> Any:
        """Turn a format-1 file (no ``format_version``) into this format's shape; the default keeps it."""
        return raw


def versioned(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the current ``format_version`` as its first key, ready to write."""
    return {"format_version": RUN_FORMAT_VERSION, **{k: v for k, v in data.items() if k != "format_version"}}


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _problem(err: dict[str, Any]) -> str:
    if err.get("type") == "missing":
        return "required field is missing"
    msg = str(err.get("msg") or "invalid value")
    return msg[0].lower() + msg[1:]


def _note_migration(where: str) -> None:
    """Say once per run directory that its unversioned files are read as format 1 and migrated."""
    path = where.split(" record ")[0]
    run = path.rsplit("/users/", 1)[0] if "/users/" in path else str(Path(path).parent)
    if run in _noted:
        return
    _noted.add(run)
    _log.warning("note: %s holds files without format_version (written before run files were versioned); they "
                 "are read as format %d and migrated in memory to format %d; files on disk are left as they are",
                 run, UNVERSIONED, RUN_FORMAT_VERSION)


def parse_record(raw: Any, model: type[M], where: str) -> M:
    """Validate parsed JSON as ``model``, migrating an unversioned file.

    Args:
        raw: the parsed JSON.
        model: the record model.
        where: the file (and line) for messages.

    Raises:
        RunError: wrong shape or another format version, naming ``where`` and the field.
    """
    if isinstance(raw, dict) and "format_version" in raw:
        version = raw["format_version"]
        if version != RUN_FORMAT_VERSION or isinstance(version, bool):
            raise RunError(
                f"{where}: format_version {version!r} is not one this amemgym reads (it writes format "
                f"{RUN_FORMAT_VERSION} and migrates format {UNVERSIONED}, the unversioned files of earlier "
                "releases); refused: read it with the amemgym version that wrote it")
        data = raw
    else:
        _note_migration(where)
        data = model.from_unversioned(raw)
        if isinstance(data, dict):
            data = {**data, "format_version": RUN_FORMAT_VERSION}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise RunError(f"{where}: {_loc(tuple(first['loc']))}: {_problem(dict(first))} "
                       f"(not a valid {model.kind} record){tail}") from None
    except RecursionError:
        raise RunError(f"{where}: nested too deeply to be a {model.kind} record") from None


def load_json_file(path: Path) -> Any:
    """Parse one JSON file of a run directory.

    Raises:
        RunError: missing, unreadable, truncated, not JSON, or nested too deeply, naming the file.
    """
    require_regular_file(path)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise RunError(f"{path}: missing; is this a finished run directory?") from None
    except IsADirectoryError:
        raise RunError(f"{path}: is a directory, expected a JSON file") from None
    except UnicodeDecodeError as exc:
        raise RunError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}: truncated or not JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise RunError(f"{path}: nested too deeply to be a run file") from None
    except OSError as exc:
        raise RunError(f"{path}: unreadable ({exc.strerror or exc})") from None


def read_record(path: Path, model: type[M]) -> M:
    """Read and validate one JSON run file as ``model`` (see :func:`parse_record`)."""
    return parse_record(load_json_file(Path(path)), model, str(path))


def as_dict(record: RunFile) -> dict[str, Any]:
    """A validated record as the plain dict it was read from (coerced values, migrated shape)."""
    return record.model_dump(mode="json", exclude_unset=True) | {"format_version": record.format_version}
