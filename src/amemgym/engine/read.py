"""Finding a unit family's runs and records below the folders given to ``report``, ``leaderboard``, ``compare``.

A folder given on the command line is a run directory (its ``manifest.json`` names the family), a ``--trials``
output (``trial_k`` run directories), or a folder of such runs up to :data:`MAX_DEPTH` levels deep. Each folder
given is one label: its records form their own entries (``pool.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RunError
from ..records import run_family
from .pool import Entry, Found, build_entries
from .rundir import RECORD_FILE, UnitRunDir, peek_family

__all__ = ["MAX_DEPTH", "family_of_tree", "load_entries", "load_found", "runs_under", "unfinished_runs"]

#: How deep below a given folder run directories are looked for.
MAX_DEPTH = 4


def runs_under(root: Path, family: str | None = None) -> list[Path]:
    """The unit-family run directories at ``root`` or below it (of ``family`` when given), in path order."""
    root = Path(root)
    found = []
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(root.glob("/".join(["*"] * depth + ["manifest.json"]))):
            name = run_family(path.parent)
            if name is not None and (family is None or name == family):
                found.append(path.parent)
    return found


def family_of_tree(root: Path) -> str | None:
    """The unit family of the runs at or below ``root``, or of a unit record found there; None if none."""
    runs = runs_under(root)
    if runs:
        return run_family(runs[0])
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(Path(root).glob("/".join(["*"] * depth + [RECORD_FILE]))):
            name = peek_family(path)
            if name is not None:
                return name
    return None


def unfinished_runs(roots: list[Path]) -> list[tuple[Path, list[str]]]:
    """Runs below ``roots`` with planned units that have no record yet, with those units' ids."""
    out = []
    for root in roots:
        for run in runs_under(root):
            rd = UnitRunDir(run)
            missing = [u["id"] for u in (rd.manifest() or {}).get("units") or []
                       if not (rd.unit_dir(u["id"]) / RECORD_FILE).is_file()]
            if missing:
                out.append((run, missing))
    return out


#: A planned unit without a record: (folder label, agent, served model, group, unit label).
Planned = tuple[str, str, str, str, str]


def load_found(roots: list[Path], family: str | None = None) -> tuple[list[Found], list[Planned]]:
    """Every unit record below the given folders, each labelled by its folder (labels made unique), and the
    planned units without a record as (label, agent, served model, group, unit label).

    Raises:
        RunError: a folder holds no run of the family, or a record is unreadable.
    """
    from ..report.load import unique_labels

    paths = [Path(r) for r in roots]
    found: list[Found] = []
    planned: list[Planned] = []
    for root, label in zip(paths, unique_labels(paths), strict=True):
        runs = runs_under(root, family)
        if not runs:
            raise RunError(f"{root}: no {family or 'unit-family'} run here or up to {MAX_DEPTH} levels below "
                           "(no manifest.json naming the family)")
        for run in runs:
            rd = UnitRunDir(run)
            manifest = rd.manifest() or {}
            agent = str((manifest.get("protocol") or {}).get("agent"))
            first: dict[str, Any] = next(iter((manifest.get("models") or {}).values()), {})  # the agent's role comes first
            model = str(first.get("served") or "-")
            for u in manifest.get("units") or []:
                record = rd.record(u["id"])
                if record is None:
                    planned.append((label, agent, model, str(u["group"]), str(u["label"])))
                    continue
                found.append(Found(rd.unit_dir(u["id"]), label, record))
    return found, planned


def load_entries(roots: list[Path], family: str | None = None) -> list[Entry]:
    """The records below the given folders pooled into entries (one per folder, agent, group and protocol)."""
    found, planned = load_found(roots, family)
    return build_entries(found, planned)
