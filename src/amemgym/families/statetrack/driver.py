"""Glue between the CLI and the runner: resolve inputs, run, print the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...agents.base import AgentContext
from ...agents.registry import resolve_agent
from ...config import AppConfig
from ...engine.flags import ModelFlags
from ...engine.models_file import apply_models_file
from ...errors import AMemGymError, RunError
from ...llm.client import LLMClient
from ...llm.health import describe as describe_problem
from ...llm.health import truncation_note
from ...llm.preflight import run_roles
from ...scoring.registry import in_display_order, registered
from .cut import environment_cut, first_users
from .data.io import environment_sha256, load_environment
from .data.model import Environment
from .generate.procedural import tiny_environment_path
from .layout import RunDir
from .metrics import RESULT_FLAGS
from .validity.sim_audit import degenerate_warning


def default_environment() -> Path:
    """The bundled procedural tiny environment."""
    return tiny_environment_path()


def check_off_policy_source(source: Path, env: Environment) -> None:
    """Refuse, before any call, an ``--off-policy`` source that cannot replay every session of this run.

    Raises:
        RunError: ``source`` is not a run directory, lacks some of this run's users, or has not finished one.
    """
    from ...engine.trials import trial_run_dirs
    from ...records import Manifest, read_record
    from ...records.base import load_json_file
    from .compat.original_layout import IMPORT_FORMAT

    rd = RunDir(source)
    if not rd.manifest.exists():
        trials = trial_run_dirs(source) if source.is_dir() else []
        hint = f"; it is a --trials output: replay one of its trials, e.g. {trials[0]}" if trials else ""
        raise RunError(f"{source}: not a run directory (no manifest.json) for --off-policy{hint}")
    raw = load_json_file(rd.manifest)
    if isinstance(raw, dict) and raw.get("format") == IMPORT_FORMAT and isinstance(raw.get("users"), list):
        recorded = {str(u) for u in raw["users"]}  # an original interactions folder imported by compat
    else:
        recorded = set(read_record(rd.manifest, Manifest).users)
    missing = [u.id for u in env.users if u.id not in recorded]
    if missing:
        raise RunError(f"--off-policy {source}: has no conversations of {len(missing)} of this run's "
                       f"{len(env.users)} users (first: {missing[0]!r}); it recorded {len(recorded)} user(s), so "
                       f"replay it on those: the same --env with --limit {len(recorded)}, or its own environment")
    for user in env.users:
        planned = sum(len(p.sessions) for p in user.periods)
        have = len(rd.session_records(user.id))
        if have < planned:
            raise RunError(f"--off-policy {source}: user {user.id!r} has {have} of its {planned} sessions recorded "
                           "(the source run is unfinished); finish the source run first")


def _fmt(stat: dict[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "n/a"
    if stat.get("lo") is None:
        return f"{stat['mean']:.3f}"
    return f"{stat['mean']:.3f} [{stat['lo']:.3f}, {stat['hi']:.3f}]"


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else str(value if value is not None else "n/a")


#: What each headline number means, in the words a first-time reader needs; a metric not listed here is
#: explained by its registry description.
MEANINGS = {
    "overall": "share of the questions the agent answered right, with its memory",
    "upper_bound": "share right when the bare model is told the user's current state: the most memory can give",
    "random": "expected share right when guessing uniformly among the options: the floor",
    "memory_score": "(overall - random) / (upper bound - random) per user and period, averaged over users: "
                    "0 is no better than random, 1 is as good as the upper bound",
}


def headline_text(overall: dict[str, Any]) -> str:
    """The memory score as the console shows it: ``undefined`` for a degenerate run, whose value is noise."""
    if overall.get("flags"):
        return "undefined (DEGENERATE run)"
    return _fmt(overall.get("memory_score"))


def print_summary(console: Console, metrics: dict[str, Any], rundir: Path) -> None:
    """The short summary printed after a run: a table, what each number means, flags, answers, usage."""
    o = metrics["overall"]
    flags = list(o.get("flags") or [])
    table = Table("metric", "mean [95% CI over users]", title=f"{metrics.get('agent')} - {rundir}")
    cells = o.get("memory_cells") or {}
    meanings: list[str] = []
    for m in (m for m in in_display_order() if m.name in o):
        text = headline_text(o) if m.name == "memory_score" else _fmt(o[m.name])
        if m.name == "memory_score" and cells.get("total"):
            text += f" ({cells['undefined']}/{cells['total']} cells excluded: UB <= R)"
        table.add_row(m.name, text)
        meaning = MEANINGS.get(m.name, m.description)
        if m.name == "memory_score" and flags:
            meaning += f"; undefined here ({'; '.join(flags)})"
        meanings.append(f"{m.label}: {meaning}")
    for m in registered("pooled"):
        v = m.read(o)
        # A grouped rate is named with its group's singular: "write failure rate".
        name = f"{m.label} {m.group.removesuffix('s').replace('_', ' ')}" if m.group else m.label
        table.add_row(name, "n/a" if v is None else f"{v:.3f}")
        meanings.append(f"{name}: {m.description}")
    console.print(table)
    for line in meanings:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for flag in o.get("flags") or []:
        console.print(f"[red]DEGENERATE[/]: {flag} - {RESULT_FLAGS.get(flag, '')}. This run is reported but not "
                      "ranked on the leaderboard.", highlight=False)
    warning = degenerate_warning(metrics.get("simulator"))
    if warning:
        console.print(f"[yellow]{warning}[/]", highlight=False)
    problems = metrics.get("endpoint_problems") or []
    for problem in problems:
        console.print(f"[red]{describe_problem(problem)}[/red]", highlight=False)
    answers = metrics.get("answers") or {}
    if answers.get("total"):
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in answers["status_counts"].items() if k != "ok")
        rule = "the original's rule (0 = last option, else random)" if answers.get("rule") == "original" \
            else "strict: scored wrong"
        strict, original = _num(answers.get("overall_strict")), _num(answers.get("overall_original_rule"))
        if answers["invalid"]:
            console.print(f"invalid answers: {answers['invalid']} of {answers['total']}"
                          + (f" ({counts})" if counts else "") + f"; headline uses {rule}. overall strict "
                          f"{strict}, original rule {original}", highlight=False)
        else:
            console.print(f"invalid answers: 0 of {answers['total']}", highlight=False)
    orig = o.get("memory_score_original")
    if orig is not None:
        console.print(f"memory score, original aggregation (mean over all user x period cells, unguarded): "
                      f"{_num(orig)}{' (noise: DEGENERATE run)' if flags else ''}; amemgym's: {headline_text(o)} "
                      "over users, "
                      f"{o.get('undefined_memory_cells', 0)} undefined cell(s) excluded", highlight=False)
    for diff in (metrics.get("protocol_settings") or {}).get("differences_from_original", []):
        console.print(f"note: {diff}; numbers are not comparable with published results", highlight=False)
    usage = metrics.get("usage", {}).get("last_invocation", {}).get("total", {})
    console.print(
        f"this invocation: {usage.get('calls', 0)} model calls, {usage.get('cache_hits', 0)} cache hits, "
        f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} completion tokens, "
        f"{metrics.get('wall_seconds_last_invocation', 0):.1f} s", highlight=False)
    replays = int(usage.get("cache_replays") or 0)
    if replays:
        # A run repeated with the same seed, model and prompts (trial 1 of a --trials run included) replays its
        # earlier replies: cheap, but not a new sample, so it is said.
        asked = replays + int(usage.get("calls") or 0)
        console.print(f"note: {replays} of {asked} replies came from the response cache (an earlier call with the "
                      "same model, prompt and seed), not from the model; pass --no-cache for fresh samples",
                      highlight=False, markup=False)
    cut = truncation_note(metrics.get("usage", {}).get("last_invocation", {}))
    if cut:
        console.print(cut, highlight=False, markup=False)


def run_command(
    cfg: AppConfig, env_path: Path | None, agent: str, out_dir: Path, *, off_policy: Path | None, console: Console,
    executor: str = "local", ray_address: str | None = None, models: Path | None = None,
    allow_model_change: bool = False, flags: ModelFlags | None = None, limit: int | None = None,
    environment: Environment | None = None, settings_note: str | None = None,
) -> int:
    """Run (or resume) on the engine (:func:`amemgym.engine.runner.run_units`) and print where the results are.
    Returns the exit code.

    ``executor`` is ``local`` (this process, or worker processes: ``run.workers``) or ``ray`` (one Ray task per
    user, see ``docs/scale-out.md``); ``models`` is a YAML file of per-role endpoints laid over ``llm.roles``;
    ``allow_model_change`` lets a resumed run continue on another model than it started with (each session
    records its model); ``flags`` are the model flags (applied last); ``limit`` runs the first N users;
    ``environment`` is the file at ``env_path`` when the caller has already loaded it (trials then parse it
    once); ``settings_note`` says where the settings came from, printed once the run is known to start (a
    refusal stays one line). Bad input (another run's directory, an off-policy source that cannot be
    replayed, an agent whose factory fails) is refused before any endpoint is probed; every role the run will
    call is checked before the first model call.
    """
    from ...engine.runner import RunOptions, run_units
    from .runner import protocol_of
    from .units import STATETRACK_UNITS, statetrack_plan, units_of

    spec = resolve_agent(agent)
    env_path = env_path or default_environment()
    # With --limit only the first N users are read (data.io streams the file); the cut records the file's hash.
    env = first_users(environment if environment is not None else load_environment(env_path, limit=limit), limit)
    sha256 = environment_sha256(env)
    units = units_of(env, sha256)  # refuses users that would share a folder
    if models is not None:
        cfg.llm.roles = apply_models_file(cfg.llm.roles, models)  # type: ignore[arg-type, assignment]
    if spec.llm_overrides:
        roles = dict(cfg.llm.roles)
        roles["agent"] = {**roles.get("agent", {}), **spec.llm_overrides}
        cfg.llm.roles = roles
    if flags is not None:
        flags.apply(cfg)
    if off_policy is not None:
        check_off_policy_source(off_policy, env)
    protocol = protocol_of(sha256, spec, cfg, off_policy)
    plan = statetrack_plan(spec, protocol, run_roles(spec.roles, off_policy=off_policy is not None),
                           off_policy=off_policy, environment_cut=environment_cut(env_path, limit))
    llm = LLMClient.from_config(cfg.llm, serial=cfg.run.serial)
    # Build one agent before any work, so a plug-in whose factory fails is refused up front, not mid-run.
    spec.build(llm, AgentContext(user_id="agent-check", state_schema=dict(env.users[0].state_schema)))
    opts = RunOptions(agent=spec.name, serial=cfg.run.serial, allow_model_change=allow_model_change,
                      executor=executor, ray_address=ray_address)
    code = run_units(STATETRACK_UNITS, cfg, env_path, out_dir, opts, console=console,
                     units=units, plan=plan, notes=[settings_note],
                     client=llm)
    console.print(f"results: {out_dir / 'metrics.json'} (traces under {out_dir / 'users'})")
    write_run_report(out_dir, console, environment=(env, protocol["environment_sha256"]))
    return code


def write_run_report(rundir: Path, console: Console, *, environment: tuple[Any, str] | None = None) -> None:
    """Write ``RUNDIR/report.html`` (skipped, with a note, when the report extra is not installed).

    ``environment`` is the run's environment and its sha256 when the caller has them in memory.
    """
    try:
        from ...report.build import build_report

        report = build_report([rundir], environment=environment)
    except ImportError as exc:
        console.print(f"report skipped ({exc}); install it with: pip install 'amemgym[report]'", highlight=False)
        return
    except AMemGymError as exc:
        console.print(f"report skipped: {exc}", highlight=False, markup=False)
        return
    RunDir(rundir).writer().put_text_now("report.html", report.html)
    console.print(f"report: {rundir / 'report.html'}", highlight=False)
