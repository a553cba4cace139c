"""``--trials N`` for a unit family: the run N times into ``OUT/trial_k`` under seeds ``run.seed + k - 1``.

Each trial is a whole run directory (its own manifest, lock, usage and metrics), as for statetrack. The
summary, ``OUT/trials.json``, gives per trial its seed, completeness, per-entry headline and flags, and pooled
over the trials (each unit's trials averaged first) the spread between trials and pass^k over questions
(:func:`amemgym.engine.pool.pass_k`, the one computation of it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import AppConfig
from ..records import run_family
from ..storage import atomic_write_json
from .contract import UnitFamily
from .read import load_entries
from .runner import ClientFactory, RunOptions, run_units
from .summary import headline_of

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["run_unit_trials", "trial_summary", "unit_trial_dirs"]


def unit_trial_dirs(root: Path) -> list[Path]:
    """The ``trial_N`` run directories of a unit family's ``--trials`` output, in trial order."""
    found = []
    for d in Path(root).glob("trial_*"):
        suffix = d.name.removeprefix("trial_")
        if d.is_dir() and suffix.isdigit() and run_family(d) is not None:
            found.append((int(suffix), d))
    return [d for _, d in sorted(found)]


def run_unit_trials(family: UnitFamily, cfg: AppConfig, env: Path, out_dir: Path, opts: RunOptions, trials: int, *,
                    console: Console, make_client: ClientFactory | None = None) -> int:
    """Run ``trials`` trials, write ``trials.json`` and print the spread; the worst trial's exit code."""
    from .lock import run_lock

    units = family.units(env, opts.limit)
    base = cfg.run.seed
    codes = []
    # OUT is held for the whole set, so no other run starts beside the trials; each trial holds its own folder.
    with run_lock(out_dir, "amemgym run --trials"):
        for k in range(1, trials + 1):
            trial_cfg = cfg.model_copy(deep=True)
            trial_cfg.run.seed = base + k - 1
            console.print(f"trial {k}/{trials} (run seed {trial_cfg.run.seed})", highlight=False)
            codes.append(run_units(family, trial_cfg, env, out_dir / f"trial_{k}", opts, console=console,
                                   units=units, make_client=make_client))
        summary = trial_summary(family.name, out_dir, trials)
        atomic_write_json(out_dir / "trials.json", summary)
    head = headline_of(family.name)
    for key, t in summary["pooled"].items():
        std = "n/a" if t["spread"]["std"] is None else f"{t['spread']['std']:.4f}"
        passk = "n/a" if t["consistency"] is None else f"{t['consistency']:.3f}"
        per = ", ".join("n/a" if x is None else f"{x:.3f}" for x in t[f"{head.name}_per_trial"])
        console.print(f"{key}: {head.label} per trial {per}; std between trials {std}; pass^{t['k']} over questions "
                      f"{passk}", highlight=False, markup=False)
    console.print(f"trials summary: {out_dir / 'trials.json'}", highlight=False)
    return max(codes)


def trial_summary(family: str, out_dir: Path, trials: int) -> dict[str, Any]:
    """Per trial its seed, completeness, per-entry headline and flags; pooled, the spread and pass^k."""
    from .rundir import UnitRunDir

    head = headline_of(family)
    rows = []
    for k in range(1, trials + 1):
        d = out_dir / f"trial_{k}"
        rd = UnitRunDir(d)
        manifest = rd.manifest() if rd.manifest_path.exists() else {}
        entries = load_entries([d]) if d.is_dir() else []
        failed = len(rd.failures())
        flags = [f"{failed} unit(s) failed"] if failed else []
        for e in entries:
            if e.unfinished:
                flags.append(f"{e.agent}/{e.group}: {len(e.unfinished)} planned unit(s) unfinished")
            if e.units_without(head):
                flags.append(f"{e.agent}/{e.group}: no {head.label} on {len(e.units_without(head))} unit(s)")
        rows.append({"trial": d.name, "run_seed": (manifest or {}).get("protocol", {}).get("run_seed"),
                     "complete": not flags, head.name: {f"{e.agent}/{e.group}/{e.protocol}": e.stat(head)
                                                        for e in entries}, "flags": flags})
    pooled = {}
    for e in load_entries([out_dir]):
        stat = e.stat(head)
        t = e.trials(head) or {"k": 1, "seeds": e.seeds, "same_units": True, f"{head.name}_per_trial": [stat["mean"]],
                               "spread": {"mean": stat["mean"], "std": None, "n": 1}, "questions_in_all_trials": 0,
                               "consistency": None, "pass_at_1": None}
        pooled[f"{e.agent}/{e.group}/{e.protocol}"] = {"units": len(e.unit_set), head.name: stat, **t}
    return {"family": family, "trials": rows, "pooled": pooled, "definitions": {
        head.name: "per entry (agent, group, protocol): mean over units; pooled, each unit's trials are averaged "
                   "first, so the interval is over units",
        "spread": f"each trial's mean {head.label} over its units; their mean and sample standard deviation",
        "consistency": "pass^k: share of (unit, question) asked in all k trials answered correctly in all k",
    }}
