"""``amemgym run`` on a statetrack environment: settings, refusals, dry run, trials and the JSON summary.

The family adapter (``families/statetrack/family.py``) forwards the request here; each single run goes through
:func:`amemgym.families.statetrack.driver.run_command`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ...agents.checker import build_isolated
from ...agents.guard import set_call_limit
from ...agents.registry import may_be_plugin, resolve_agent
from ...cli_common import err
from ...config import PRESETS, AppConfig, load_config
from ...engine.flags import ModelFlags
from ...engine.models_file import apply_models_file
from ...engine.trials import refuse_mixed_layout, run_trials, trial_dirs
from ...llm.preflight import run_roles
from ...records import FailuresFile, Metrics, as_dict, read_record
from ...runfiles import FAILURES, REPORT
from ...scoring.registry import in_display_order, registered
from .cut import first_users
from .data.io import load_environment
from .data.model import Environment
from .driver import default_environment, run_command
from .estimate import estimate_run
from .layout import RunDir
from .trials import write_trial_summary

if TYPE_CHECKING:
    from rich.console import Console

    from .. import RunRequest
    from .options import RunOptions


def generated_with(env: Environment) -> str | None:
    """The preset the environment's users were generated with (``_amemgym.config_name``), if one preset.

    None when the file does not say (the original release's files), names no preset (a custom config file)
    or its users disagree.
    """
    names = {u.amemgym.config_name if u.amemgym else None for u in env.users}
    name = names.pop() if len(names) == 1 else None
    return name if name in PRESETS else None


def settings_for(environment: Environment | None, config: str | None, sets: list[str] | None
                 ) -> tuple[AppConfig, str | None]:
    """The settings a run (or an evolve run) on ``environment`` takes, and the note to print about them.

    The environment carries the preset it was generated with, and the run takes its settings from there unless
    ``--config`` says otherwise (then the note says so). With neither, the bundled tiny demo runs tiny.
    """
    carried = generated_with(environment) if environment is not None else None
    cfg = load_config(config or carried or (None if environment is not None else "tiny"), sets)
    return cfg, protocol_note(carried, config)


def protocol_note(carried: str | None, config: str | None) -> str | None:
    """The line that says where a run's settings come from, when the environment names its preset."""
    if carried is None:
        return None
    if config is None:
        return f"settings: protocol {carried}, as the environment was generated (--config overrides)"
    if config == carried:
        return None
    return (f"note: the environment was generated with config {carried}; this run uses --config {config} "
            f"instead (its token limits and run settings), so it does not follow the {carried} protocol")


def run_request(r: RunRequest[RunOptions], console: Console) -> int:
    """Run (or resume, or estimate) what ``r`` asks; returns the exit code.

    With ``--json`` every human-readable line goes to stderr and stdout carries one JSON summary.
    """
    if r.options.json:
        console = err
    flags = ModelFlags(r.model, r.user_model, r.judge_model, r.max_connections)
    # A typo is refused before the environment is read; a plug-in's code runs only once the run's settings (its
    # time limits) are known, and first in a child process (driver.run_command).
    plugin = may_be_plugin(r.agent)
    spec = None if plugin else resolve_agent(r.agent)
    environment = load_environment(r.env, limit=r.limit) if r.env else None  # --limit reads only N users
    cfg, note = settings_for(environment, r.config, r.sets)
    if r.serial:
        cfg.run.serial = True
    if spec is None:
        set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)
        build_isolated(r.agent, cfg)
        # Its module's own code runs again here, as it is imported: what it prints is not the --json summary.
        with contextlib.redirect_stdout(sys.stderr) if r.options.json else contextlib.nullcontext():
            spec = resolve_agent(r.agent)
    # A model flag for a role the run never calls is refused before the first trial starts (each refusal acts
    # only when its flag was given); an agent plug-in that declares the judge role keeps it.
    called = run_roles(spec.roles, off_policy=r.options.off_policy is not None)
    flags.refuse_unused_judge(called, "amemgym run", "multiple-choice answers are scored exactly")
    flags.refuse_unused_user_model(called, "amemgym run", "--off-policy replays recorded conversations")
    if not r.options.dry_run:
        refuse_mixed_layout(r.out_dir, r.trials)
    if r.options.resimulate_leaks:
        cfg.run.resimulate_leaks = True
    if r.no_cache:
        cfg.llm.cache = False
    if r.options.dry_run:
        played = first_users(environment or load_environment(default_environment()), r.limit)
        return dry_run(cfg, played, spec.roles, r, flags, console, note)

    def one(out_dir: Path, first: bool = True) -> int:
        # With --json, stdout carries the summary alone: what a plug-in prints goes to stderr meanwhile.
        with contextlib.redirect_stdout(sys.stderr) if r.options.json else contextlib.nullcontext():
            return run_command(cfg, r.env, r.agent, out_dir, off_policy=r.options.off_policy, console=console,
                               executor=r.executor, ray_address=r.ray_address, models=r.models,
                               allow_model_change=r.allow_model_change, flags=flags, limit=r.limit,
                               environment=environment, settings_note=note if first else None,
                               agent_built=plugin)

    if r.trials == 1:
        code = one(r.out_dir)
        if r.options.json:
            _emit(run_summary(r.out_dir, code))
        return code

    dirs = trial_dirs(r.out_dir, r.trials)
    summary: dict[str, Any] = {}

    def play(k: int, seed: int, trial_dir: Path) -> int:
        cfg.run.seed = seed
        return one(trial_dir, first=k == 1)

    codes = run_trials(r.out_dir, r.trials, cfg.run.seed, play, console=console,
                       finish=lambda codes: summary.update(write_trial_summary(r.out_dir, dirs)))
    flagged = sum(1 for t in summary["trials"] if t["flags"] and t["complete"] is True)
    unfinished = summary.get("unfinished") or []
    if unfinished:
        console.print(f"unfinished: {', '.join(unfinished)} (left out of the spread below; re-run the same command "
                      "to finish them)", highlight=False)
    for name, s in summary["spread"].items():
        if name == "memory_score" and flagged:
            console.print(f"{name}: undefined ({flagged} of {len(dirs)} trials DEGENERATE)", highlight=False)
            continue
        std = "n/a" if s["std"] is None else f"{s['std']:.4f}"
        mean = "n/a" if s["mean"] is None else f"{s['mean']:.4f}"
        console.print(f"{name}: mean {mean}, std between trials {std} (n={s['n']})", highlight=False)
    console.print(f"trials summary: {r.out_dir / 'trials.json'}", highlight=False)
    if r.options.json:
        trials = [run_summary(d, c) for d, c in zip(dirs, codes, strict=True)]
        _emit({"out_dir": str(r.out_dir), "exit_code": max(codes), "trials": trials, "spread": summary["spread"],
               "unfinished": unfinished,
               "cache": {"replies_from_cache": sum(t["cache"]["replies_from_cache"] for t in trials),
                         "replayed": any(t["cache"]["replayed"] for t in trials)}})
    return max(codes)


def dry_run(cfg: AppConfig, env: Environment, agent_roles: tuple[str, ...] | None, r: RunRequest[RunOptions],
            flags: ModelFlags, console: Console, note: str | None) -> int:
    """Print (or emit as JSON) the estimate of :func:`.estimate.estimate_run`; no call, no file."""
    if r.models is not None:
        cfg.llm.roles = apply_models_file(cfg.llm.roles, r.models)  # type: ignore[arg-type, assignment]
    flags.apply(cfg)
    estimate = estimate_run(env, cfg, agent_roles, replay=r.options.off_policy is not None, trials=r.trials)
    if r.options.json:
        _emit({"dry_run": True, **estimate})
        return 0
    if note:
        console.print(note, highlight=False, markup=False)
    trials = f", {r.trials} trials" if r.trials > 1 else ""
    table = Table("role", "calls", "prompt tokens (est.)", "completion tokens (est. / max)", "cost (USD)",
                  title=f"dry run: {estimate['users']} users, {estimate['periods']} periods{trials}; no model called")
    for row in estimate["roles"]:
        calls = "-" if row["calls"] is None else f"{row['calls']:,}"
        done = "-" if row["calls"] is None else f"{row['completion_tokens']:,} / {row['completion_tokens_max']:,}"
        cost = "-" if row["cost_usd"] is None else f"{row['cost_usd']:.2f}"
        table.add_row(row["role"], calls, "-" if row["calls"] is None else f"{row['prompt_tokens']:,}", done, cost)
    console.print(table)
    for row in estimate["roles"]:
        if row["note"]:
            console.print(f"{row['role']}: {row['note']}", highlight=False, markup=False)
    assumed = estimate["assumed_reply_tokens"]
    console.print(f"calls follow from the schedule (identical calls in flight are shared, so a run may send fewer); "
                  f"tokens assume the whole conversation in context and replies of about {assumed['agent']} "
                  f"(agent), {assumed['simulator']} (simulated user) and {assumed['answer']} (answers) tokens",
                  highlight=False, markup=False)
    return 0


def run_summary(rundir: Path, code: int) -> dict[str, Any]:
    """One run's machine-readable summary, read from its ``metrics.json`` (what ``--json`` prints)."""
    metrics = as_dict(read_record(RunDir(rundir).metrics, Metrics))
    o = metrics["overall"]
    flags = list(o.get("flags") or [])
    usage = ((metrics.get("usage") or {}).get("last_invocation") or {}).get("total") or {}
    replays = int(usage.get("cache_replays") or 0)
    failures = RunDir(rundir).root / FAILURES
    failed = len(read_record(failures, FailuresFile).failures) if failures.exists() else 0
    report = RunDir(rundir).root / REPORT
    return {
        "run_dir": str(rundir), "agent": metrics.get("agent"), "exit_code": code, "complete": metrics["complete"],
        "failures": failed, "degenerate": bool(flags), "flags": flags,
        # The headline as the console shows it: undefined (null) when the run is degenerate.
        "memory_score": None if flags else (o.get("memory_score") or {}).get("mean"),
        "metrics": {m.name: o[m.name] for m in in_display_order() if m.name in o},
        "rates": {m.name: m.read(o) for m in registered("pooled")},
        "cache": {"replies_from_cache": replays, "shared_in_flight": int(usage.get("cache_hits") or 0) - replays,
                  "replayed": replays > 0},
        "usage": usage,
        # Why the run's usage count is a lower bound (a usage file was deleted), else None.
        "usage_incomplete": (metrics.get("usage") or {}).get("incomplete"),
        "differences_from_original": (metrics.get("protocol_settings") or {}).get("differences_from_original", []),
        "files": {"metrics": str(RunDir(rundir).metrics),
                  "failures": str(failures) if failures.exists() else None,
                  "report": str(report) if report.exists() else None},
    }


def _emit(summary: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(summary, indent=2, default=str) + "\n")
    sys.stdout.flush()
