"""``--trials N`` for every family: the run N times into ``OUT/trial_k`` under seeds ``run.seed + k - 1``.

Each trial is a whole run directory (its own manifest, lock, usage and metrics). :func:`run_trials` is the one
trials loop: it holds ``OUT`` for the whole set (so no other run starts inside or around it) and hands each
trial to the family's run; :func:`trial_run_dirs` and :func:`is_trials_dir` are how every reader recognises
the output. The spread between trials and pass^k are computed in :mod:`amemgym.engine.pool`
(:func:`~amemgym.engine.pool.spread`, :func:`~amemgym.engine.pool.pass_k`).

For a unit family the summary, ``OUT/trials.json``, gives per trial its seed, completeness, per-entry
headline and flags, and pooled over the trials (each unit's trials averaged first) the spread between trials
and pass^k over questions. Statetrack writes its own panel of the same file (its registered cell metrics per
trial, ``amemgym.families.statetrack.trials``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import AppConfig
from ..errors import ConfigError
from ..runfiles import MANIFEST, TRIALS
from ..storage import atomic_write_json
from .contract import Unit, UnitFamily
from .lock import run_lock
from .read import load_entries
from .rundir import UnitRunDir
from .runner import ClientFactory, RunOptions, run_units
from .summary import headline_of

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["is_trials_dir", "refuse_mixed_layout", "run_trials", "run_unit_trials", "trial_dirs", "trial_run_dirs",
           "trial_summary"]


def trial_dirs(out_dir: Path, trials: int) -> list[Path]:
    """``out_dir/trial_1`` .. ``trial_N``."""
    return [Path(out_dir) / f"trial_{k}" for k in range(1, trials + 1)]


def trial_run_dirs(root: Path) -> list[Path]:
    """The ``trial_N`` run directories under a ``--trials`` output, in trial order (empty if it is not one)."""
    found = []
    for d in Path(root).glob("trial_*"):
        suffix = d.name.removeprefix("trial_")
        if d.is_dir() and suffix.isdigit() and (d / MANIFEST).exists():
            found.append((int(suffix), d))
    return [d for _, d in sorted(found)]


def is_trials_dir(root: Path) -> bool:
    """Whether ``root`` holds ``--trials`` output (trial folders, no run of its own)."""
    return not (Path(root) / MANIFEST).exists() and bool(trial_run_dirs(root))


def refuse_mixed_layout(out_dir: Path, trials: int) -> None:
    """Refuse to put a single run and ``--trials`` output in one directory (either way round), for every family.

    Readers take a directory with a ``manifest.json`` as one run and ignore its trial folders, and a
    ``--trials`` output as its trials, so a mix would silently drop one of them from every board.

    Raises:
        ConfigError: ``out_dir`` holds the other layout.
    """
    if trials > 1 and (Path(out_dir) / MANIFEST).exists():
        raise ConfigError(f"{out_dir} holds a single run (manifest.json); --trials {trials} would add trial "
                          "folders that readers of this directory never see; use a new --out directory")
    existing = trial_run_dirs(out_dir) if Path(out_dir).is_dir() else []
    if trials == 1 and existing:
        raise ConfigError(f"{out_dir} holds a --trials output ({len(existing)} trials); re-run it with --trials "
                          f"{len(existing)} (or more) to resume it, or use a new --out directory")
    highest = max((int(d.name.removeprefix("trial_")) for d in existing), default=0)
    if 1 < trials < highest:
        # Readers pool every trial folder they find; a summary of fewer would contradict them.
        raise ConfigError(f"{out_dir} holds trials up to trial_{highest}; re-run it with --trials {highest} (or "
                          f"more), not {trials}, or use a new --out directory")
    parent, name = Path(out_dir).parent, Path(out_dir).name
    if (name.startswith("trial_") and name.removeprefix("trial_").isdigit() and (parent / TRIALS).exists()
            and not (parent / MANIFEST).exists()):
        # Its seed would be this command's, not trial k's: readers would pool a repeat of another trial.
        raise ConfigError(f"{out_dir} is a trial folder of the --trials output {parent}; resume that with "
                          "--trials on the parent folder")


def run_trials(out_dir: Path, trials: int, base_seed: int, play: Callable[[int, int, Path], int], *,
               console: Console, finish: Callable[[list[int]], None] = lambda codes: None) -> list[int]:
    """Play trial ``k`` (``play(k, seed, OUT/trial_k)``, seed ``base_seed + k - 1``) for k = 1..N; the exit codes.

    ``OUT`` is held for the whole set and ``finish`` (given the codes; it writes the summary), so no other run
    starts beside the trials; each trial holds its own folder. A set refused before its first trial wrote
    anything (bad input found by the family's run) leaves no ``OUT`` behind.
    """
    codes = []
    with run_lock(out_dir, "amemgym run --trials"):  # which removes an OUT it made if the set is refused
        for k, d in enumerate(trial_dirs(out_dir, trials), start=1):
            seed = base_seed + k - 1
            console.print(f"trial {k}/{trials} (run seed {seed})", highlight=False)
            codes.append(play(k, seed, d))
        finish(codes)
    return codes


def run_unit_trials(family: UnitFamily, cfg: AppConfig, env: Path, out_dir: Path, opts: RunOptions, trials: int, *,
                    console: Console, make_client: ClientFactory | None = None,
                    units: list[Unit] | None = None) -> int:
    """Run ``trials`` trials, write ``trials.json`` and print the spread; the worst trial's exit code.

    ``units`` are ``env``'s when the caller has read them already (None: read here)."""
    units = units if units is not None else family.units(env, opts.limit)

    def play(k: int, seed: int, trial_dir: Path) -> int:
        trial_cfg = cfg.model_copy(deep=True)
        trial_cfg.run.seed = seed
        return run_units(family, trial_cfg, env, trial_dir, opts, console=console, units=units,
                         make_client=make_client)

    summary: dict[str, Any] = {}

    def finish(codes: list[int]) -> None:
        summary.update(trial_summary(family.name, out_dir, trials))
        atomic_write_json(out_dir / TRIALS, summary)

    codes = run_trials(out_dir, trials, cfg.run.seed, play, console=console, finish=finish)
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
    head = headline_of(family)
    rows = []
    for d in trial_dirs(out_dir, trials):
        rd = UnitRunDir(d)
        manifest = rd.manifest() if rd.manifest_path.exists() else {}
        entries = load_entries([d]) if d.is_dir() else []
        failed = len(rd.failures())
        flags = [f"{failed} unit(s) failed"] if failed else []
        for e in entries:
            if e.unfinished:
                flags.append(f"{e.agent}/{e.group}: {len(e.unfinished)} planned unit(s) unfinished")
            if e.incomplete:
                flags.append(f"{e.agent}/{e.group}: incomplete ({'; '.join(e.incomplete)})")
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
