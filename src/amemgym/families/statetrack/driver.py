"""Glue between the CLI and the runner: resolve inputs, run, print the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from ...agents.base import AgentContext
from ...agents.checker import build_isolated
from ...agents.guard import set_call_limit
from ...agents.registry import may_be_plugin, resolve_agent
from ...config import AppConfig
from ...engine.flags import ModelFlags
from ...engine.models_file import apply_models_file
from ...engine.runner import RunOptions, run_units
from ...engine.trials import trial_run_dirs
from ...errors import AMemGymError, RunError
from ...llm.client import LLMClient
from ...llm.preflight import run_roles
from ...records import Manifest, read_record
from ...records.base import load_json_file
from ...report.build import build_report
from ...runfiles import METRICS, REPORT
from .compat.original_layout import IMPORT_FORMAT
from .cut import environment_cut, first_users, recorded_environment
from .data.io import environment_sha256, load_environment
from .data.model import Environment
from .generate.procedural import tiny_environment_path
from .layout import RunDir
from .protocol import protocol_of
from .units import STATETRACK_UNITS, statetrack_plan, units_of


def default_environment() -> Path:
    """The bundled procedural tiny environment."""
    return tiny_environment_path()


def check_off_policy_source(source: Path, env: Environment, env_path: Path | None = None,
                            env_sha256: str | None = None) -> None:
    """Refuse, before any call, an ``--off-policy`` source that cannot replay every session of this run
    (``env_sha256``: ``env``'s hash, when the caller has it).

    Raises:
        RunError: ``source`` is not a run directory, lacks some of this run's users, has not finished one, or
            was played on other data for them (:func:`_refuse_other_data`).
    """
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
    _refuse_other_data(source, raw, env, env_path, env_sha256 or environment_sha256(env))
    for user in env.users:
        planned = sum(len(p.sessions) for p in user.periods)
        have = len(rd.session_records(user.id))
        if have < planned:
            raise RunError(f"--off-policy {source}: user {user.id!r} has {have} of its {planned} sessions recorded "
                           "(the source run is unfinished); finish the source run first")


def _refuse_other_data(source: Path, manifest: dict[str, Any], env: Environment, env_path: Path | None,
                       env_sha256: str) -> None:
    """Refuse a source run whose users, as it played them, differ from this run's: replayed openings would then
    tell the agent states this run's questions are not about, and every score would be measured against facts
    the agent never heard.

    The same users are recognised by the source's environment hash (this run's users, or its first ones), else
    user by user against the source's environment file (the one its manifest names, or this run's ``--env``
    when that is the file the source was played on).
    """
    recorded = (manifest.get("protocol") or {}).get("environment_sha256")
    if not recorded or env_sha256 == recorded:
        return
    users = [str(u) for u in manifest.get("users") or []]
    if (len(env.users) > len(users) and [u.id for u in env.users[: len(users)]] == users
            and environment_sha256(first_users(env, len(users))) == recorded):
        return
    played, why = recorded_environment(manifest)
    if played is None and env_path is not None:
        played, _ = recorded_environment(manifest, override=env_path)
    if played is None:
        raise RunError(f"--off-policy {source}: was played on another environment (sha256 {recorded[:12]}, this "
                       f"run's is {env_sha256[:12]}) and its file cannot be read to compare users "
                       f"({why}); replay it on the environment it was played on")
    by_id = {u.id: u for u in played.users}
    differ = [u.id for u in env.users if by_id.get(u.id) != u]
    if differ:
        raise RunError(f"--off-policy {source}: {len(differ)} of this run's users were played on other data there "
                       f"(first: {differ[0]!r}); replay it on the environment it was played on")


def run_command(
    cfg: AppConfig, env_path: Path | None, agent: str, out_dir: Path, *, off_policy: Path | None, console: Console,
    executor: str = "local", ray_address: str | None = None, models: Path | None = None,
    allow_model_change: bool = False, flags: ModelFlags | None = None, limit: int | None = None,
    environment: Environment | None = None, settings_note: str | None = None, agent_built: bool = False,
) -> int:
    """Run (or resume) on the engine (:func:`amemgym.engine.runner.run_units`) and print where the results are.
    Returns the exit code.

    ``executor`` is ``local`` (this process, or worker processes: ``run.workers``) or ``ray`` (one Ray task per
    user, see ``docs/scale-out.md``); ``models`` is a YAML file of per-role endpoints laid over ``llm.roles``;
    ``allow_model_change`` lets a resumed run continue on another model than it started with (each session
    records its model); ``flags`` are the model flags (applied last); ``limit`` runs the first N users;
    ``environment`` is the file at ``env_path`` when the caller has already loaded it (trials then parse it
    once); ``settings_note`` says where the settings came from, printed once the run is known to start (a
    refusal stays one line); ``agent_built`` says the caller already built a plug-in ``agent`` in a child process
    (:func:`~amemgym.agents.checker.build_isolated`), which this function does otherwise. Bad input (another
    run's directory, an off-policy source that cannot be replayed, an agent whose factory fails) is refused
    before any endpoint is probed; every role the run will call is checked before the first model call.
    """
    set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)
    if may_be_plugin(agent) and not agent_built:
        # Its code first runs in a child process: a factory that fails, hangs or ends its process is refused in
        # one line before any work, and the factory never runs here (its users play in worker processes).
        build_isolated(agent, cfg)
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
        check_off_policy_source(off_policy, env, env_path, sha256)
    protocol = protocol_of(sha256, spec, cfg, off_policy)
    plan = statetrack_plan(spec, protocol, run_roles(spec.roles, off_policy=off_policy is not None),
                           off_policy=off_policy, environment_cut=environment_cut(env_path, limit))
    llm = LLMClient.from_config(cfg.llm, serial=cfg.run.serial)
    if not spec.plugin:
        # Build one agent before any work, so a factory that fails is refused up front, not mid-run.
        spec.build(llm, AgentContext(user_id="agent-check", state_schema=dict(env.users[0].state_schema)))
    opts = RunOptions(agent=spec.name, serial=cfg.run.serial, allow_model_change=allow_model_change,
                      executor=executor, ray_address=ray_address)
    code = run_units(STATETRACK_UNITS, cfg, env_path, out_dir, opts, console=console,
                     units=units, plan=plan, notes=[settings_note],
                     client=llm)
    console.print(f"results: {out_dir / METRICS} (traces under {out_dir / 'users'})")
    write_run_report(out_dir, console, environment=(env, protocol["environment_sha256"]))
    return code


def write_run_report(rundir: Path, console: Console, *, environment: tuple[Any, str] | None = None) -> None:
    """Write ``RUNDIR/report.html`` (skipped, with a note, when the report extra is not installed).

    ``environment`` is the run's environment and its sha256 when the caller has them in memory.
    """
    try:
        report = build_report([rundir], environment=environment)
    except ImportError as exc:
        console.print(f"report skipped ({exc}); install it with: pip install 'amemgym[report]'", highlight=False)
        return
    except AMemGymError as exc:
        console.print(f"report skipped: {exc}", highlight=False, markup=False)
        return
    RunDir(rundir).writer().put_text_now(REPORT, report.html)
    console.print(f"report: {rundir / REPORT}", highlight=False)
