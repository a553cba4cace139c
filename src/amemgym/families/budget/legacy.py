"""Budget run directories written before the engine: ``model.json``, ``batch.json``, ``tool_protocol.json``.

Earlier versions pinned the served models in ``OUT/model.json``, the planned episodes and the settings a resume
must match in ``OUT/batch.json``, and each episode's tool protocol in ``<episode>/tool_protocol.json``; the
engine keeps all of it in ``OUT/manifest.json``. A directory holding the old files and no manifest is
*adopted*: the manifest is written from them before the engine looks, so a resume checks the old model pin
(a change is refused unless ``--allow-model-change``), the old agent and run seed, and keeps the old tool
protocol, exactly as if the run had been started by this version. Its checkpoints and results are read as
they are (the engine reads the old checkpoint format).

A directory that cannot be adopted safely (an unreadable old file, no ``batch.json`` to say which agent and
run seed wrote the results, a result of another agent or seed, episodes pinned to two tool protocols) is
refused with one line saying what to do. A directory holding both a manifest and an old ``model.json`` that
disagree (a resume by a version that ignored the old pin) is refused too, unless the change is allowed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ... import __version__
from ...engine.lock import run_lock
from ...engine.rundir import UnitRunDir
from ...errors import RunError
from ...runfiles import UNIT_RECORD
from .model import FAMILY

__all__ = ["BATCH_FILE", "LEGACY_FILES", "MODEL_FILE", "PIN_FILE", "adopt_legacy_run", "adopt_legacy_runs"]

MODEL_FILE = "model.json"
BATCH_FILE = "batch.json"
PIN_FILE = "tool_protocol.json"
#: The root files only an earlier version wrote.
LEGACY_FILES = (MODEL_FILE, BATCH_FILE)
#: How to proceed when a directory cannot be adopted.
_HOW = "use a new --out directory, or move the old files away to start this run afresh"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RunError(f"{path}: unreadable file of an earlier amemgym; {_HOW}") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: not the shape an earlier amemgym wrote; {_HOW}")
    return data


def _models(root: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's ``models`` and ``model_changes`` from ``model.json``."""
    path = root / MODEL_FILE
    data = _read(path)
    try:
        models = {"agent": {"served": str(data["agent_model"])},
                  **{str(r): {"served": str(m)} for r, m in dict(data.get("role_models") or {}).items()}}
        changes = [{"role": str(c.get("role", "agent")), "from": str(c["from"]), "to": str(c["to"])}
                   for c in list(data.get("changes") or [])]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise RunError(f"{path}: not the shape an earlier amemgym wrote; {_HOW}") from None
    return models, changes


def _pins(root: Path, unit_ids: list[str]) -> dict[str, Any]:
    """The tool protocol the episodes were pinned to (one for the whole run, as the engine keeps it)."""
    found: dict[str, tuple[str, str]] = {}
    for uid in dict.fromkeys([".", *unit_ids]):
        path = root / uid / PIN_FILE
        if path.is_file():
            data = _read(path)
            if not isinstance(data.get("tool_protocol"), str) or not isinstance(data.get("reason"), str):
                raise RunError(f"{path}: not the shape an earlier amemgym wrote; {_HOW}")
            found[uid] = (data["tool_protocol"], data["reason"])
    protocols = sorted({p for p, _ in found.values()})
    if len(protocols) > 1:
        raise RunError(f"{root}: its episodes were run with the {' and '.join(protocols)} tool protocols, which one "
                       f"run no longer mixes; {_HOW}")
    if not found:
        return {}
    protocol, reason = next(iter(found.values()))
    return {"tool_protocol": {"protocol": protocol, "reason": reason}}


def _units(root: Path, batch: dict[str, Any]) -> list[dict[str, Any]]:
    """The planned episodes of ``batch.json`` as the manifest's units."""
    try:
        return [{"id": str(e["path"]), "sha256": str(e["sha256"]), "group": str(e["tier"]),
                 "label": f"{e['tier']}/{e['domain']}/seed{e['seed']}", "tier": str(e["tier"]),
                 "domain": str(e["domain"]), "seed": int(e["seed"]), "salt": int(e["salt"])}
                for e in list(batch.get("episodes") or [])]
    except (KeyError, TypeError, ValueError):
        raise RunError(f"{root / BATCH_FILE}: not the shape an earlier amemgym wrote; {_HOW}") from None


def _check_results(root: Path, units: list[dict[str, Any]], agent: str, run_seed: int) -> None:
    """Every old result was written by the batch's agent and run seed (the engine trusts a finished record)."""
    for u in units:
        path = root / u["id"] / UNIT_RECORD
        if not path.is_file():
            continue
        data = _read(path)
        if "run_seed" not in data:
            raise RunError(f"{path}: written before results carried their run seed; remove it and the episode "
                           "finishes from its checkpoint, or " + _HOW)
        if (data.get("agent"), data.get("run_seed")) != (agent, run_seed):
            raise RunError(f"{path}: written by agent {data.get('agent')!r} with run seed {data.get('run_seed')}, "
                           f"not the {agent!r} and seed {run_seed} of {root / BATCH_FILE}; {_HOW}")


def _check_pinned_model(rd: UnitRunDir, manifest: dict[str, Any], *, allow_change: bool) -> None:
    """A manifest written beside an old ``model.json`` (by a version that ignored it) must agree with it; an
    allowed difference is recorded in the manifest's ``model_changes`` like any other."""
    root = rd.root
    old, _ = _models(root)
    now = manifest.get("models") or {}
    recorded = {(c.get("role"), c.get("from")) for c in manifest.get("model_changes") or []}
    found = []
    for role, pin in old.items():
        served = (now.get(role) or {}).get("served")
        if served is not None and served != pin["served"] and (role, pin["served"]) not in recorded:
            if allow_change:
                found.append({"role": role, "from": pin["served"], "to": served,
                              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "found_in": MODEL_FILE})
                continue
            raise RunError(f"{root}: {MODEL_FILE} of an earlier amemgym pins {role} model {pin['served']!r} but the "
                           f"run went on with {served!r}; refusing to mix models in one run (use a new --out "
                           "directory, or pass --allow-model-change)")
    if found:
        rd.write_manifest({**manifest, "model_changes": [*(manifest.get("model_changes") or []), *found]})


def adopt_legacy_run(root: Path, *, allow_model_change: bool = False) -> bool:
    """Write ``root/manifest.json`` from an earlier version's files, if ``root`` holds them and no manifest.

    Returns whether the directory was adopted.

    Raises:
        RunError: the old files cannot be adopted safely (one line saying how to proceed), or a manifest and
            an old ``model.json`` disagree on a model and ``allow_model_change`` is off.
    """
    root = Path(root)
    if not any((root / name).is_file() for name in LEGACY_FILES):
        return False
    rd = UnitRunDir(root)
    with run_lock(root, "amemgym run"):
        manifest = rd.manifest()
        if manifest is not None:
            if (root / MODEL_FILE).is_file():
                _check_pinned_model(rd, manifest, allow_change=allow_model_change)
            return False
        if not (root / BATCH_FILE).is_file():
            raise RunError(f"{root}: holds {MODEL_FILE} of an earlier amemgym but no {BATCH_FILE}, so which agent "
                           f"and run seed wrote its results is unknown; {_HOW}")
        if not (root / MODEL_FILE).is_file():
            raise RunError(f"{root}: holds {BATCH_FILE} of an earlier amemgym but no {MODEL_FILE}, so the model "
                           f"its episodes ran with is unknown; {_HOW}")
        batch = _read(root / BATCH_FILE)
        if batch.get("family", FAMILY) != FAMILY or not isinstance(batch.get("agent"), str) \
                or not isinstance(batch.get("run_seed"), int):
            raise RunError(f"{root / BATCH_FILE}: not the shape an earlier amemgym wrote; {_HOW}")
        agent, run_seed = batch["agent"], batch["run_seed"]
        models, changes = _models(root)
        units = _units(root, batch)
        _check_results(root, units, agent, run_seed)
        pins = _pins(root, [u["id"] for u in units])
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        rd.write_manifest({
            "family": FAMILY, "amemgym_version": __version__, "created": when,
            "environment_file": batch.get("environment") if isinstance(batch.get("environment"), str) else None,
            "units": units, "protocol": {"agent": agent, "run_seed": run_seed}, "models": models,
            "model_changes": changes, "pins": pins, "adopted": {"from": [n for n in (
                MODEL_FILE, BATCH_FILE) if (root / n).is_file()], "at": when}})
    return True


def adopt_legacy_runs(out_dir: Path, *, allow_model_change: bool = False) -> list[Path]:
    """Adopt ``out_dir`` and, for a ``--trials`` output, each ``trial_k`` below it; the adopted folders."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return []
    roots = [out_dir, *sorted(p for p in out_dir.glob("trial_*") if p.is_dir())]
    return [r for r in roots if adopt_legacy_run(r, allow_model_change=allow_model_change)]
