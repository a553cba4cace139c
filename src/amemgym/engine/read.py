"""Finding a unit family's runs and records below the folders given to ``report``, ``leaderboard``, ``compare``.

A folder given on the command line is a run directory (its ``manifest.json`` names the family), a ``--trials``
output (``trial_k`` run directories), or a folder of such runs up to :data:`MAX_DEPTH` levels deep. Each folder
given is one label: its records form their own entries (``pool.py``). A folder inside a run directory (a
group's or one unit's folder) is read as the part of that run below it, with the run's own record of what it
has not finished, so a subfolder of an unfinished run is never read as a finished one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..families import get_family
from ..records import run_family
from ..records.base import load_json_file
from ..records.units import peek_family
from ..runfiles import MANIFEST, TRIALS, UNIT_RECORD
from .checkpoint import CHECKPOINT_FILE
from .pool import Entry, Found, Pending, build_entries
from .rundir import UnitRunDir, read_unit_record

__all__ = ["MAX_DEPTH", "bare_records", "check_manifest_file", "checkpoint_family", "enclosing_run",
           "family_of_tree", "load_entries", "load_found", "load_root", "refuse_damaged_runs",
           "refuse_missing_trials", "refuse_nothing_finished", "refuse_started_unit", "require_results", "runs_under",
           "unfinished_runs", "unique_labels"]

#: How deep below a given folder run directories are looked for.
MAX_DEPTH = 4
#: A ``--trials`` output's summary, listing its trial folders.


def runs_under(root: Path, family: str | None = None) -> list[Path]:
    """The unit-family run directories at ``root`` or below it (of ``family`` when given), in path order."""
    root = Path(root)
    found = []
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(root.glob("/".join(["*"] * depth + [MANIFEST]))):
            name = run_family(path.parent)
            if name is not None and (family is None or name == family):
                found.append(path.parent)
    return found


def refuse_damaged_runs(root: Path) -> None:
    """Refuse a run at or below ``root`` whose records would otherwise silently leave the numbers: a
    ``manifest.json`` that cannot be read as a JSON object (it names no family, so the run is not seen: one
    trial of a ``--trials`` output, one run of a folder of runs), or a ``--trials`` output whose ``trials.json``
    lists a trial that holds no run any more.

    Raises:
        RunError: naming the file and what is wrong with it.
    """
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(Path(root).glob("/".join(["*"] * depth + [MANIFEST]))):
            if peek_family(path) is None:  # else it was read, and names its family
                check_manifest_file(path)
        for path in sorted(Path(root).glob("/".join(["*"] * depth + [TRIALS]))):
            refuse_missing_trials(path.parent)


def refuse_missing_trials(root: Path) -> None:
    """Refuse a ``--trials`` output whose ``trials.json`` lists a trial folder that holds no run any more (its
    trials would be pooled as fewer, with nothing said).

    Raises:
        RunError: ``trials.json`` is unreadable or of the wrong shape, or a trial it lists is gone.
    """
    path = Path(root) / TRIALS
    if not path.is_file():
        return
    data = load_json_file(path)
    listed = data.get("trials") if isinstance(data, dict) else None
    rows = listed if isinstance(listed, list) else []
    names = [str(t["trial"]) for t in rows if isinstance(t, dict) and isinstance(t.get("trial"), str)]
    if not rows or len(names) != len(rows) or not all(re.fullmatch(r"trial_[0-9]+", n) for n in names):
        raise RunError(f"{path}: not a trials summary (expected a list of trials, each naming its trial_N folder)")
    gone = [n for n in names if not (Path(root) / n / MANIFEST).is_file()]
    if gone:
        raise RunError(f"{path} lists {', '.join(gone)}, which holds no run any more (no manifest.json); restore "
                       f"it, or take it out of {TRIALS} to pool the trials that are left")


def check_manifest_file(path: Path) -> None:
    """Refuse a ``manifest.json`` that cannot be read as a JSON object.

    Raises:
        RunError: naming the file and what is wrong with it.
    """
    data = load_json_file(path)
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run manifest (a JSON {type(data).__name__}, not an object)")


def family_of_tree(root: Path) -> str | None:
    """The unit family of the runs at or below ``root``, or of a unit record found there; None if none."""
    runs = runs_under(root)
    if runs:
        return run_family(runs[0])
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(Path(root).glob("/".join(["*"] * depth + [UNIT_RECORD]))):
            name = peek_family(path)
            if name is not None:
                return name
    return checkpoint_family(Path(root))


def checkpoint_family(unit_dir: Path) -> str | None:
    """The family of a unit folder that holds only a checkpoint (a unit started and not finished)."""
    try:
        data = json.loads((unit_dir / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    identity = data.get("identity") if isinstance(data, dict) else None
    name = identity.get("family") if isinstance(identity, dict) else None
    return name if isinstance(name, str) else None


def unfinished_runs(roots: list[Path]) -> list[tuple[Path, list[str]]]:
    """Runs below ``roots`` with planned units that have no record yet, with those units' ids."""
    out = []
    for root in roots:
        for run in runs_under(root):
            rd = UnitRunDir(run)
            missing = [u["id"] for u in (rd.manifest() or {}).get("units") or []
                       if not (rd.unit_dir(u["id"]) / UNIT_RECORD).is_file()]
            if missing:
                out.append((run, missing))
    return out


def served_model(manifest: dict[str, Any]) -> str:
    """The model a run's records name as theirs: the served model of the agent's role (else of the first role
    the run pinned; the manifest lists every configured role, pinned or not)."""
    models = manifest.get("models") or {}
    pinned = [m for m in [models.get("agent"), *models.values()] if isinstance(m, dict) and m.get("served")]
    return str(pinned[0]["served"]) if pinned else "-"


def run_unfinished(rd: UnitRunDir) -> tuple[set[str], str | None]:
    """What the run's ``metrics.json`` says is not finished: the unit ids it lists as missing, and why the run as
    a whole is not (None when it says the run is complete).

    Raises:
        RunError: ``metrics.json`` is unreadable or of the wrong shape.
    """
    if not rd.metrics_path.exists():
        return set(), f"{rd.metrics_path} is missing: the run has not finished"
    metrics = rd.metrics()
    if metrics["complete"]:
        return set(), None
    return {str(u) for u in metrics.get("missing") or []}, f"{rd.metrics_path} says the run is not complete"


def unique_labels(roots: list[Path]) -> list[str]:
    """Directory names, prefixed with parents where two runs share a name."""
    labels = [r.name for r in roots]
    paths = [r.resolve() for r in roots]
    depth = 1
    while len(set(labels)) < len(labels) and depth < max(len(p.parts) for p in paths):
        depth += 1
        labels = [str(Path(*p.parts[-depth:])) for p in paths]
    if len(set(labels)) < len(labels):  # the same folder given twice
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    return labels


def load_found(roots: list[Path], family: str | None = None) -> tuple[list[Found], list[Pending]]:
    """Every unit record below the given folders, each labelled by its folder (labels made unique), and the work
    their runs have not finished: planned units without a record (or listed missing by ``metrics.json``), and,
    when none is, a run whose ``metrics.json`` is absent or says it is not complete.

    Raises:
        RunError: a folder holds no run of the family, or a record or ``metrics.json`` is unreadable.
    """
    paths = [Path(r) for r in roots]
    found: list[Found] = []
    pending: list[Pending] = []
    for root, label in zip(paths, unique_labels(paths), strict=True):
        f, p = load_root(root, label, family)
        found += f
        pending += p
    return found, pending


def enclosing_run(folder: Path, family: str | None = None) -> Path | None:
    """The unit-family run directory ``folder`` lies inside (a folder above it whose ``manifest.json`` names a
    family, ``family`` when given), or None.

    Raises:
        RunError: a ``manifest.json`` above it cannot be read as a JSON object.
    """
    for parent in Path(folder).resolve().parents:
        manifest = parent / MANIFEST
        if manifest.is_file():
            name = peek_family(manifest)
            if name is None:
                check_manifest_file(manifest)  # a statetrack manifest passes; a damaged one is named
                continue
            return parent if family is None or name == family else None
    return None


def load_root(root: Path, label: str, family: str | None = None) -> tuple[list[Found], list[Pending]]:
    """The records and unfinished work below one folder given on the command line, labelled ``label``.

    A folder inside a run directory (a unit group's folder, one episode's) is read as the part of that run
    below it: its planned units there and the run's own verdict on whether it finished, so reading a subfolder
    never hides that the run is unfinished.

    Raises:
        RunError: the folder holds no run of the family, or a record or ``metrics.json`` is unreadable.
    """
    root = Path(root)
    refuse_damaged_runs(root)
    runs = runs_under(root, family)
    if runs:
        found: list[Found] = []
        pending: list[Pending] = []
        for run in runs:
            f, p = _read_run(run, label)
            found += f
            pending += p
        return found, pending
    outer = enclosing_run(root, family)
    if outer is not None:
        inside = root.resolve()
        f, p = _read_run(outer, label, within=lambda unit: inside == unit or inside in unit.parents)
        if f or any(x.unit is not None for x in p):
            return f, p
    bare = bare_records(root, family)
    if not bare:
        raise RunError(f"{root}: no {family or 'unit-family'} run here or up to {MAX_DEPTH} levels below "
                       "(no manifest.json naming the family, no results.json of it)")
    return [Found(d, label, described(r)) for d, r in bare], []


def _read_run(run: Path, label: str,
              within: Callable[[Path], bool] | None = None) -> tuple[list[Found], list[Pending]]:
    """One run directory's records and unfinished work (only its units whose folder ``within`` accepts)."""
    rd = UnitRunDir(run)
    manifest = rd.manifest() or {}
    agent = str((manifest.get("protocol") or {}).get("agent"))
    model = served_model(manifest)
    missing, reason = run_unfinished(rd)
    found: list[Found] = []
    pending: list[Pending] = []
    units_pending = 0
    for u in manifest.get("units") or []:
        if within is not None and not within(rd.unit_dir(u["id"]).resolve()):
            continue
        record = rd.record(u["id"])
        if record is None or u["id"] in missing:
            pending.append(Pending(run, label, agent, model, str(u["group"]), str(u["label"])))
            units_pending += 1
        if record is not None:
            found.append(Found(rd.unit_dir(u["id"]), label, with_run_changes(described(record), manifest), run))
    if reason is not None and not units_pending:
        pending.append(Pending(run, label, agent, model, reason=reason))
    return found, pending


def bare_records(root: Path, family: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Unit records in folders without a run directory around them (a unit played on its own, or a run written
    before the engine kept a manifest), at ``root`` or up to :data:`MAX_DEPTH` levels below it."""
    root = Path(root)
    out = []
    for depth in range(MAX_DEPTH + 1):
        for path in sorted(root.glob("/".join(["*"] * depth + [UNIT_RECORD]))):
            name = peek_family(path)
            if name is None or (family is not None and name != family):
                continue
            record = read_unit_record(path)
            if record is not None:
                out.append((path.parent, record))
        if depth == 0 and out:
            break  # the root is itself a unit folder
    return out


def with_run_changes(record: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """``record`` carrying every model change of its run as well as its own.

    A unit records the changes made before it was played; a change a later resume was allowed to make (or one
    seen only in the replies, recorded when that invocation ended) is in the manifest alone. Flagged by
    either, every unit of the run is kept off the ranking, not only those played after the change.
    """
    own = list(record.get("model_changes") or [])
    seen = {(c.get("role"), c.get("from"), c.get("to")) for c in own if isinstance(c, dict)}
    more = [c for c in manifest.get("model_changes") or []
            if isinstance(c, dict) and (c.get("role"), c.get("from"), c.get("to")) not in seen]
    return {**record, "model_changes": own + more} if more else record


def described(record: dict[str, Any]) -> dict[str, Any]:
    """A record with the engine's pooling fields, derived again from its content when the family can (so an
    edited record pools by what it says, and a record written on its own gets them)."""
    units = getattr(get_family(str(record["family"])), "units", None)
    describe = getattr(units, "describe", None)
    return {**record, **describe(record)} if callable(describe) else record


def load_entries(roots: list[Path], family: str | None = None) -> list[Entry]:
    """The records below the given folders pooled into entries (one per folder, agent, group and protocol)."""
    found, pending = load_found(roots, family)
    return build_entries(found, pending)


def require_results(roots: list[Path], family: str, noun: str = "units") -> None:
    """Refuse, in one line, a folder with no finished unit of ``family`` (its numbers do not exist yet).

    Raises:
        RunError: naming the first such folder: a unit started and not finished, or nothing finished at all.
    """
    for d in map(Path, roots):
        refuse_started_unit(d, family, noun)
        refuse_nothing_finished(d, *load_found([d], family), noun)


def refuse_started_unit(d: Path, family: str, noun: str = "units") -> None:
    """Refuse a unit's own folder that holds its checkpoint but no record yet.

    Raises:
        RunError: the unit has not finished.
    """
    if checkpoint_family(d) == family and not (d / UNIT_RECORD).exists():
        raise RunError(f"{d}: the {noun.rstrip('s')} has not finished (no {UNIT_RECORD}); run `amemgym run` "
                       "again with the same --out to resume it")


def refuse_nothing_finished(d: Path, found: list[Found], pending: list[Pending], noun: str = "units") -> None:
    """Refuse a folder whose records (``found``, with its unfinished work ``pending``) hold no finished unit.

    Raises:
        RunError: nothing below ``d`` has finished.
    """
    if not found:
        planned = sum(p.unit is not None for p in pending)
        raise RunError(f"{d}: no {noun} finished yet ({planned} planned); run `amemgym run` again with "
                       "the same --out to resume")
