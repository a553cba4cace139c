"""The run directory of a unit family: the same root files as a statetrack run, and one folder per unit.

```
OUT/
  manifest.json        family, planned units, protocol, served models, pins (UnitManifest)
  metrics.json         every unit's metrics and the per-group means with intervals (UnitMetrics)
  usage.json           usage of all invocations; usage.pending.json while one runs (engine/usage.py)
  failures.json        what failed in the last invocation, redacted (FailuresFile)
  .amemgym.lock        held by the one process writing the directory (engine/lock.py)
  <unit>/              results.json (UnitRecord), checkpoint.json, trace.jsonl (engine/checkpoint.py)
```

Only the engine writes these files; a family returns records and states.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..llm.redact import redact_obj
from ..records import (
    FailuresFile,
    UnitManifest,
    UnitMetrics,
    as_dict,
    parse_unit_record,
    read_record,
    versioned,
)
from ..records.base import RunFile, load_json_file
from ..runfiles import FAILURES, MANIFEST, METRICS, UNIT_RECORD
from ..storage import fsync_dir
from .unit_writer import UnitWriter, check_name

__all__ = ["UnitRunDir", "move_unit"]

def prepare_out_dir(root: Path) -> None:
    """Create the run directory ``root`` (or accept an existing one) and make sure files can be written in it.

    Raises:
        RunError: ``root`` is a file, a dangling symbolic link, cannot be created, or is not writable.
    """
    root = Path(root)
    if root.is_symlink() and not root.exists():
        raise RunError(f"{root}: --out is a symbolic link to nothing ({os.readlink(root)}); give a directory")
    if root.exists() and not root.is_dir():
        raise RunError(f"{root}: --out is a file, not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        # A real write, not os.access: permissions are not the only reason a write fails (read-only mounts).
        fd, probe = tempfile.mkstemp(prefix=".write-check.", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise RunError(f"{root}: --out is not writable ({exc.strerror or exc})") from None


#: Each unit's record, in the unit's folder.


def move_unit(root: Path, old: str, new: str) -> None:
    """Rename the unit folder ``old`` to ``new`` inside the run directory ``root`` (both relative unit ids).

    For a family whose folder names changed between versions (statetrack's legacy user folders); the caller
    holds the run lock.

    Raises:
        RunError: either name leaves the run directory, or ``new`` exists already.
    """
    source, target = Path(root) / check_name(old), Path(root) / check_name(new)
    if target.exists():
        raise RunError(f"{target}: exists already; cannot move {old} there")
    source.rename(target)
    fsync_dir(target.parent)


class UnitRunDir:
    """Paths and records of one unit-family run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST

    @property
    def metrics_path(self) -> Path:
        return self.root / METRICS

    @property
    def failures_path(self) -> Path:
        return self.root / FAILURES

    def unit_dir(self, unit_id: str) -> Path:
        """The folder of the unit ``unit_id`` (``.`` is the run directory itself)."""
        return self.root / unit_id

    def manifest(self, record: type[RunFile] = UnitManifest) -> dict[str, Any] | None:
        """The manifest, validated as ``record`` (None when there is none yet)."""
        if not self.manifest_path.exists():
            return None
        return as_dict(read_record(self.manifest_path, record))

    def write_manifest(self, manifest: Mapping[str, Any], record: type[RunFile] = UnitManifest) -> None:
        """Validate (as ``record``: a family may have a manifest of its own shape) and write the manifest
        atomically."""
        data = versioned(dict(manifest))
        record.model_validate(data)
        UnitWriter(self.root).put_now(MANIFEST, data)

    def record(self, unit_id: str) -> dict[str, Any] | None:
        """A finished unit's record (None when the unit has none, or another family wrote the file).

        Raises:
            RunError: the file is unreadable or of the wrong shape.
        """
        path = self.unit_dir(unit_id) / UNIT_RECORD
        if not path.is_file():
            return None
        return read_unit_record(path)

    def write_record(self, unit_id: str, record: Mapping[str, Any]) -> None:
        """Validate and write a unit's record (its failure texts redacted) atomically."""
        data = versioned(redact_obj(dict(record)))
        parse_unit_record(data, str(self.unit_dir(unit_id) / UNIT_RECORD))
        UnitWriter(self.root, unit_id).put_now(UNIT_RECORD, data)

    def write_failures(self, failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write ``failures.json`` (redacted again: a text from a plug-in or a worker may not have passed the
        client) and return what was written."""
        clean: list[dict[str, Any]] = redact_obj(failures)
        data = versioned({"failures": clean})
        FailuresFile.model_validate(data)
        UnitWriter(self.root).put_now(FAILURES, data)
        return clean

    def failures(self) -> list[dict[str, Any]]:
        """The failures of the last invocation (empty when none were written)."""
        if not self.failures_path.exists():
            return []
        return [f.model_dump(mode="json") for f in read_record(self.failures_path, FailuresFile).failures]

    def write_metrics(self, metrics: Mapping[str, Any], record: type[RunFile] = UnitMetrics) -> None:
        """Validate (as ``record``) and write ``metrics.json``."""
        data = versioned(dict(metrics))
        record.model_validate(data)
        UnitWriter(self.root).put_now(METRICS, data)

    def metrics(self) -> dict[str, Any]:
        """``metrics.json``, validated."""
        return as_dict(read_record(self.metrics_path, UnitMetrics))


def read_unit_record(path: Path) -> dict[str, Any] | None:
    """A unit record file as a dict; None when it is another family's file (no ``family`` key).

    Raises:
        RunError: unreadable or of the wrong shape.
    """
    raw = load_json_file(path)
    if not isinstance(raw, dict) or "family" not in raw:
        return None
    try:
        return as_dict(parse_unit_record(raw, str(path)))
    except RecursionError:
        raise RunError(f"{path}: nested too deeply") from None
