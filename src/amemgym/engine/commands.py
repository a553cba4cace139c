"""The shared commands (``run``, ``report``, ``leaderboard``, ``compare``) for any family on the engine.

:class:`EngineFamily` turns a :class:`~amemgym.engine.contract.UnitFamily` into a
:class:`~amemgym.families.Family` for the registry: a new family subclasses it and adds ``generate`` and
``validate`` (and, if it has them, the training methods); nothing in the engine changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ..agents.registry import may_be_plugin
from ..config import load_config
from ..errors import AMemGymError, ConfigError
from ..records import run_family
from ..report.stats import paired_comparison, result_rows
from ..runfiles import MANIFEST, REPORT
from ..storage import atomic_write_text, write_output_text
from .board import board_table, pair_runs
from .contract import UnitFamily
from .flags import ModelFlags
from .models_file import apply_models_file
from .ranking_flags import model_change_flag
from .read import family_of_tree, load_found, require_results, runs_under
from .report import build_unit_report
from .runner import RunOptions, plan_isolated, run_units
from .summary import headline_of
from .trials import refuse_mixed_layout, run_unit_trials

if TYPE_CHECKING:
    from rich.console import Console

    from ..config import AppConfig
    from ..families import Board, GenerateRequest, RunRequest, ValidateRequest

__all__ = ["EngineFamily"]


class EngineFamily:
    """The command-level family of the unit family ``units`` (see the module docstring)."""

    # A unit family takes only the shared ``run`` options: no ``run_options``, so the command refuses the
    # statetrack runner's own (``--off-policy``, ``--resimulate-leaks``, ``--dry-run``, ``--json``).

    def __init__(self, units: UnitFamily) -> None:
        self.units = units
        self.name = units.name

    def owns_run(self, run_dir: Path) -> bool:
        """A run directory whose manifest names this family, a ``--trials`` output or a folder of such runs, or a
        folder holding this family's unit records."""
        if (run_dir / MANIFEST).is_file():
            return run_family(run_dir) == self.name
        return family_of_tree(run_dir) == self.name

    def generate(self, request: GenerateRequest[Any], console: Console) -> int:  # pragma: no cover - per family
        raise ConfigError(f"generate is not supported for family {self.name!r}")

    def validate(self, request: ValidateRequest[Any], console: Console) -> int:  # pragma: no cover - per family
        raise ConfigError(f"validate is not supported for family {self.name!r}")

    def configure(self, cfg: AppConfig, request: RunRequest[Any]) -> None:
        """Family settings that follow from the request (the budget family's judge); none by default."""

    def run(self, request: RunRequest[Any], console: Console) -> int:
        """Run (or resume) the units of ``--env`` into ``--out`` (``--trials N``: N times, one folder each)."""
        r = request
        if r.env is None:
            raise ConfigError(f"a {self.name}-family run needs --env (a file or a folder of them)")
        refuse_mixed_layout(r.out_dir, r.trials)  # one run and --trials output never share a folder
        cfg = load_config(r.config, r.sets)
        if r.models is not None:
            cfg.llm.roles = apply_models_file(cfg.llm.roles, r.models)  # type: ignore[arg-type, assignment]
        ModelFlags(r.model, r.user_model, r.judge_model, r.max_connections).apply(cfg)
        if r.no_cache:
            cfg.llm.cache = False
        self.configure(cfg, r)
        opts = RunOptions(agent=r.agent, serial=r.serial, allow_model_change=r.allow_model_change, limit=r.limit,
                          executor=r.executor, ray_address=r.ray_address)
        units = self.units.units(r.env, r.limit)
        if may_be_plugin(r.agent):
            # Its code first runs in a child process (and then in worker processes as it plays).
            plan_isolated(self.units, r.agent, cfg, units[0])
        if r.trials == 1:
            code = run_units(self.units, cfg, r.env, r.out_dir, opts, console=console, units=units)
            self.write_run_report(r.out_dir, console)
            return code
        return run_unit_trials(self.units, cfg, r.env, r.out_dir, opts, r.trials, console=console, units=units)

    def write_run_report(self, run_dir: Path, console: Console) -> None:
        """``RUNDIR/report.html`` after a run, as a statetrack run writes it (skipped, with a note, when no unit
        has finished)."""
        panels: Any = self.units if hasattr(self.units, "report_panels") else None
        try:
            page = build_unit_report(self.name, [run_dir], panels, noun=self.units.noun)
        except AMemGymError as exc:
            console.print(f"report skipped: {exc}", highlight=False, markup=False)
            return
        atomic_write_text(run_dir / REPORT, page)
        console.print(f"report: {run_dir / REPORT}", highlight=False)

    def require_results(self, run_dirs: list[Path]) -> None:
        """Refuse, in one line, a folder with no finished unit (see :func:`.read.require_results`)."""
        require_results(run_dirs, self.name, self.units.noun)

    def report(self, run_dirs: list[Path], out_file: Path, *, env: Path | None, figures: Path | None,
               console: Console) -> int:
        """The metrics, means over units and the family's panels in one self-contained HTML file."""
        if figures is not None:
            raise ConfigError(f"--figures is not supported for {self.name}-family runs (the report embeds its charts)")
        if env is not None:
            # Taken silently it would read as if the report had been made against that file.
            raise ConfigError(f"--env is not used for {self.name}-family runs (their records carry what the "
                              "report shows); leave it out")
        self.require_results(run_dirs)
        panels: Any = self.units if hasattr(self.units, "report_panels") else None
        write_output_text(out_file, build_unit_report(self.name, run_dirs, panels, noun=self.units.noun))
        console.print(f"wrote {out_file}", highlight=False, markup=False)
        return 0

    def leaderboard(self, run_dirs: list[Path]) -> Board:
        """The headline ranking within groups of the same group, protocol and unit set; a folder that cannot be
        read (or has nothing finished) is listed as not boarded while the others are ranked."""
        panel: Any = self.units if hasattr(self.units, "board_flags") else None
        return board_table(self.name, run_dirs, panel, noun=self.units.noun,
                           group_noun=getattr(self.units, "group_noun", "unit group"))

    def compare(self, run_a: Path, run_b: Path, *, bootstrap: int, seed: int, console: Console) -> int:
        """The headline difference B - A over the units both sides ran, units resampled."""
        self.require_results([run_a, run_b])
        noun, head = self.units.noun, headline_of(self.name)
        p = pair_runs(self.name, run_a, run_b, noun=noun, group_noun=getattr(self.units, "group_noun", "unit group"))
        res = paired_comparison(p.diffs, resamples=bootstrap, seed=seed)
        n = len(p.diffs)
        table = Table("quantity", "value", title=f"{run_b} (B) vs {run_a} (A): {self.name} {head.label}, B - A")
        table.add_row(f"shared {noun}", str(n))
        if p.trials != (1, 1):
            table.add_row(f"trials per {noun.rstrip('s')} A / B (averaged per {noun.rstrip('s')})",
                          f"{p.trials[0]} / {p.trials[1]}")
        table.add_row(f"{head.label} A / B (shared {noun})",
                      f"{sum(p.value_a.values()) / n:.4f} / {sum(p.value_b.values()) / n:.4f}")
        for row in result_rows(res, noun.rstrip("s")):
            table.add_row(*row)
        table.add_row("protocol A / B", f"{', '.join(sorted(p.protocols[0]))} / {', '.join(sorted(p.protocols[1]))}")
        for side, work in zip("AB", p.unfinished, strict=True):
            table.add_row(f"unfinished {side}", "yes" if work else "no")
        console.print(table)
        for side, run, work in (("A", run_a, p.unfinished[0]), ("B", run_b, p.unfinished[1])):
            for line in work:
                console.print(f"UNFINISHED run {side} ({run}): {line}; the difference covers only the {noun} "
                              "finished on both sides", highlight=False, markup=False)
        for side, only in (("A", p.only_a), ("B", p.only_b)):
            if only:
                console.print(f"note: {len(only)} {noun.rstrip('s')}(s) of {side} have no scored counterpart and "
                              f"are left out: {', '.join(only[:5])}{' ...' if len(only) > 5 else ''}",
                              highlight=False, markup=False)
        if p.protocols[0] != p.protocols[1]:
            console.print("note: the two sides ran under different protocols", highlight=False, markup=False)

        for side, run in (("A", run_a), ("B", run_b)):
            found, _ = load_found([run], self.name)
            flag = model_change_flag([c for f in found for c in f.record.get("model_changes") or []])
            if flag:
                console.print(f"FLAGGED run {side} ({run}): {flag}; the difference is not one model's",
                              highlight=False, markup=False)
        return 0

    def run_dirs(self, root: Path) -> list[Path]:
        """This family's run directories at or below ``root``."""
        return runs_under(root, self.name)
