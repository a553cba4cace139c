"""The budget family seen through the :class:`~amemgym.families.Family` protocol (forwards to its modules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, RunError
from ...storage import atomic_write_text
from .. import Board, ExportResult, GenerateRequest, RunRequest, ValidateRequest
from .model import FAMILY as NAME

if TYPE_CHECKING:
    from rich.console import Console


class Budget:
    """Entity documents streamed past a memory store with a write budget, corrections and contradictions."""

    name = NAME

    def owns_run(self, run_dir: Path) -> bool:
        """A budget run has a ``results.json`` naming the family, or (unfinished) the harness's checkpoint; a
        folder without a statetrack manifest whose subfolders hold such runs is a collection of budget runs (as
        ``generate --official`` lays out).
        """
        if (run_dir / "manifest.json").is_file():
            return False
        if unfinished(run_dir):
            return True
        from .pool import read_batch

        try:
            if read_batch(run_dir) is not None:
                return True
        except RunError:
            return True  # the budget loader reports the unreadable file
        if (run_dir / "results.json").is_file():
            try:
                data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return False
            return isinstance(data, dict) and data.get("family") == NAME
        from .board import run_dirs_under

        try:
            return bool(run_dirs_under(run_dir))
        except RunError:
            return True  # a budget results.json that cannot be read: the budget loader reports it

    def generate(self, request: GenerateRequest, console: Console) -> int:
        """One episode, or every domain x the official seeds with ``--official``."""
        from .commands import generate

        generate(request.out_dir, tier=request.tier, domain=request.domain, seed=request.seed or 0,
                 salt=request.salt, official=request.official, console=console)
        return 0

    def validate(self, request: ValidateRequest, console: Console) -> int:
        """Scripted strategies, attacks and invariants on the file and on seeds 0..N-1 of every domain."""
        from .commands import validate

        return validate(request.env, seeds=request.seeds, json_out=request.json_out, console=console)

    def run(self, request: RunRequest, console: Console) -> int:
        """Play one episode file or a folder of them (``batch.py``); flags this family cannot honour exit 2."""
        from ...cli_common import app_config
        from ...run.flags import ModelFlags
        from .batch import RunOptions, run_batch, run_trials

        r = request
        if r.env is None:
            raise ConfigError("a budget-family run needs --env (an episode file or a folder of them)")
        flags = {"--off-policy": r.off_policy is not None, "--resimulate-leaks": r.resimulate_leaks}
        unsupported = [name for name, used in flags.items() if used]
        if unsupported:
            raise ConfigError(f"{', '.join(unsupported)} not supported for budget-family episodes yet")
        if r.executor not in ("local", "ray"):
            raise ConfigError(f"unknown executor {r.executor!r}; use 'local' or 'ray'")
        if r.ray_address and r.executor != "ray":
            raise ConfigError("--ray-address needs --executor ray")
        cfg = app_config(r.config, r.sets)
        if r.models is not None:
            from ...run.models_file import apply_models_file

            cfg.llm.roles = apply_models_file(cfg.llm.roles, r.models)  # type: ignore[arg-type, assignment]
        ModelFlags(r.model, r.user_model, r.judge_model, r.max_connections).apply(cfg)
        opts = RunOptions(agent=r.agent, serial=r.serial, no_cache=r.no_cache,
                          allow_model_change=r.allow_model_change, limit=r.limit, executor=r.executor,
                          ray_address=r.ray_address, judge=r.judge_model is not None)
        if r.trials == 1:
            return run_batch(cfg, r.env, r.out_dir, opts, console=console)
        return run_trials(cfg, r.env, r.out_dir, opts, r.trials, console=console)

    def report(self, run_dirs: list[Path], out_file: Path, *, env: Path | None, figures: Path | None,
               console: Console) -> int:
        """Axes, per-kind accuracy, budget over time and the tool-call browser in one HTML file."""
        from .board import load_entries, run_dirs_under
        from .report import build_budget_report

        if figures is not None:
            raise ConfigError("--figures is not supported for budget-family runs (the report embeds its charts)")
        require_finished(run_dirs)
        dirs = [d for root in run_dirs for d in run_dirs_under(root)]
        atomic_write_text(out_file, build_budget_report(dirs, load_entries(run_dirs)))
        console.print(f"wrote {out_file}", highlight=False, markup=False)
        return 0

    def leaderboard(self, run_dirs: list[Path]) -> Board:
        """Composite ranking within groups of the same tier and protocol."""
        from .board import leaderboard

        require_finished(run_dirs)
        return leaderboard(run_dirs)

    def compare(self, run_a: Path, run_b: Path, *, bootstrap: int, seed: int, console: Console) -> int:
        """Composite difference B - A over the episodes both sides ran, episodes resampled."""
        from rich.table import Table

        from ...report.stats import paired_comparison, result_rows
        from ...run.ranking_flags import model_change_flag
        from .board import load_results, pair_runs

        require_finished([run_a, run_b])
        p = pair_runs(run_a, run_b)
        res = paired_comparison(p.diffs, resamples=bootstrap, seed=seed)
        n = len(p.diffs)
        table = Table("quantity", "value", title=f"{run_b} (B) vs {run_a} (A): budget composite, B - A")
        table.add_row("shared episodes", str(n))
        if p.trials != (1, 1):
            table.add_row("trials per episode A / B (averaged per episode)", f"{p.trials[0]} / {p.trials[1]}")
        table.add_row("composite A / B (shared episodes)",
                      f"{sum(p.composite_a.values()) / n:.4f} / {sum(p.composite_b.values()) / n:.4f}")
        for row in result_rows(res, "episode"):
            table.add_row(*row)
        table.add_row("protocol A / B", f"{', '.join(sorted(p.protocols[0]))} / {', '.join(sorted(p.protocols[1]))}")
        console.print(table)
        for side, only in (("A", p.only_a), ("B", p.only_b)):
            if only:
                console.print(f"note: {len(only)} episode(s) of {side} have no scored counterpart and are left out: "
                              f"{', '.join(only[:5])}{' ...' if len(only) > 5 else ''}", highlight=False, markup=False)
        if p.protocols[0] != p.protocols[1]:
            console.print("note: the two sides ran under different protocols (budgeted vs long-context reference)",
                          highlight=False, markup=False)
        for side, run in (("A", run_a), ("B", run_b)):
            flag = model_change_flag([c for r in load_results([run]) for c in r.results.get("model_changes") or []])
            if flag:
                console.print(f"FLAGGED run {side} ({run}): {flag}; the difference is not one model's",
                              highlight=False, markup=False)
        return 0

    def make_env(self, env: Path | None, **options: Any) -> Any:
        """:class:`~amemgym.families.budget.gym_env.BudgetEnv` on the episode file ``env`` (None: a generated
        episode from ``tier``, ``domain``, ``seed``, ``salt`` in ``options``)."""
        from .gym_env import BudgetEnv

        return BudgetEnv(env, **options)

    def export(self, run_dir: Path, out_file: Path, *, fmt: str, unit: str | None,
               with_evaluation: bool) -> ExportResult:
        """Each event's conversation (``openai-chat``) or each tool call (``jsonl``) from the trace and results."""
        from .export import export_budget_run

        return export_budget_run(run_dir, out_file, fmt=fmt, unit=unit, with_evaluation=with_evaluation)

    def env_ids(self) -> dict[str, dict[str, Any]]:
        """``amemgym/Budget-<tier>-v0`` for every tier: a generated episode (``seed`` picks which)."""
        from .tiers import TIERS

        return {f"amemgym/Budget-{name}-v0": {"tier": name} for name in TIERS}


def unfinished(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a budget episode the harness started but has not finished (no results yet)."""
    path = run_dir / "checkpoint.json"
    if (run_dir / "results.json").exists() or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"digest", "policy", "next_event"} <= data.keys()


def require_finished(run_dirs: list[Path]) -> None:
    """Refuse, in one line, an unfinished budget run among ``run_dirs`` (its numbers do not exist yet).

    Raises:
        RunError: naming the first unfinished run.
    """
    for d in run_dirs:
        if unfinished(Path(d)):
            raise RunError(f"{d}: the budget episode has not finished (no results.json); run `amemgym run` again "
                           "with the same --out to resume it")


#: The registered instance.
FAMILY = Budget()
