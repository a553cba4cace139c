"""``amemgym run`` for every family: each unit of ``--env`` into one run directory, resumable.

The order of a run (:func:`run_units`): the units and the agent's plan are resolved (bad input exits 2 before
anything is written); an existing run directory's manifest is checked against this run's protocol, before
any endpoint is probed; every role the plan calls is preflighted (endpoint reachable, key accepted, model
served); the directory is locked; then :func:`play_units`, the part a caller with its own event loop awaits
(statetrack's ``Runner``): the manifest is checked again and adopted, the served models are pinned (a resume
with another model is refused unless allowed), the family's pins made or kept, the manifest written, and the
units that are not finished are played, concurrently up to ``run.user_concurrency`` on one client, on worker
processes, or one Ray task each. Usage accumulates in ``usage.json`` across invocations (each finished call
is journaled, so a kill loses at most the replies still arriving), failures land redacted in
``failures.json``, and ``metrics.json`` holds the family's numbers. What differs between families goes
through the contract's optional hooks (``contract.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..agents.checker import build_isolated
from ..agents.guard import set_call_limit
from ..config import AppConfig, shown_typed
from ..console import styled
from ..errors import ConfigError, RunError
from ..families.folders import natural_key
from ..llm.client import LLMClient
from ..llm.health import endpoint_problems, role_attempts
from ..llm.preflight import preflight
from ..llm.usage import UsageLedger
from ..records import UnitManifest, UnitMetrics, run_family
from ..storage import remove_stale_temps
from .contract import AgentPlan, Unit, UnitFamily, UnitRow, hook
from .executor import LocalExecutor, PlayContext, RayUnitExecutor, UnitExecutor
from .lock import run_lock
from .models import ModelPins, answered_changes, pin_models
from .play import finished_record
from .pool import Found
from .processes import ProcessUnitExecutor, within_ceiling
from .progress import Display, UnitProgress
from .ray import check_endpoints, import_ray
from .rundir import UnitRunDir, prepare_out_dir
from .sampling import check_sampling
from .usage import LiveUsage, UsageBook

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ClientFactory", "RunOptions", "RunOutcome", "embedded_note", "play_units", "run_units"]

#: Builds the run's client from its config (tests pass a scripted one; Ray tasks build their own).
ClientFactory = Callable[[AppConfig], LLMClient]


@dataclass(frozen=True)
class RunOptions:
    """The ``run`` options the engine honours for every unit family."""

    agent: str
    serial: bool = False
    allow_model_change: bool = False
    limit: int | None = None
    executor: str = "local"
    ray_address: str | None = None


def check_protocol(family: UnitFamily, rd: UnitRunDir, protocol: Mapping[str, Any], cfg: AppConfig,
                   plan: AgentPlan) -> dict[str, Any] | None:
    """The manifest already in the run directory (None for a new run), checked by the family's ``check_resume``
    hook against ``protocol``, and against the sampling settings of the roles ``plan`` calls.

    Raises:
        RunError: the directory holds another family's run, or one whose protocol or sampling settings differ
            (naming the setting).
    """
    if rd.manifest_path.exists():
        found = run_family(rd.root) or "statetrack"  # statetrack's manifest names no family
        if found != family.name:
            raise RunError(f"{rd.root}: holds a run of family {found!r}, not {family.name!r}; use a new --out "
                           "directory")
    old = rd.manifest(getattr(family, "manifest_record", UnitManifest))
    if old is None:
        return None
    checked = dict(hook(family, "check_resume")(old, protocol, rd.root))
    check_sampling(rd.root, checked, cfg.llm, plan.roles)
    return checked


def check_planned(old: Mapping[str, Any], units: Sequence[Unit], root: Path, env: Path | None) -> None:
    """Refuse a resume whose plan lacks a unit the run's manifest ``old`` already planned.

    Unit ids are folders relative to ``--env``, so another ``--env`` (a subfolder, a single file) or a smaller
    ``--limit`` names other units: played, they would land in new folders beside the finished ones and the
    run would never be complete. A plan that only adds units (a ``--limit`` raised or dropped) is a resume.

    Raises:
        RunError: naming the first planned unit the new plan does not hold.
    """
    now = {u.id for u in units}
    lacking = [str(u.get("id")) for u in old.get("units") or [] if isinstance(u, Mapping) and u.get("id") not in now]
    if not lacking:
        return
    more = f" and {len(lacking) - 1} more" if len(lacking) > 1 else ""
    raise RunError(f"{root}: holds a run with a different environment; refusing to mix results (unit "
                   f"{lacking[0]!r}{more} of the run is not among the {len(now)} unit(s) --env {env} gives now; "
                   f"resume with the run's --env {old.get('environment_file')} and no smaller --limit, or use a new "
                   "--out directory)")


def _manifest(family: UnitFamily, env: Path | None, units: list[Unit], old: dict[str, Any] | None,
              protocol: Mapping[str, Any], cfg: AppConfig, models: dict[str, Any],
              changes: list[dict[str, Any]], pins: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's manifest (a family's ``manifest`` hook may reshape it)."""
    planned = {u["id"]: u for u in (old or {}).get("units") or []}
    for u in units:
        planned[u.id] = {"id": u.id, "sha256": u.digest, "group": u.group, "label": u.label, **u.info}

    base = old or {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version()}
    return {**base, "family": family.name, "amemgym_version": __version__,
            "environment_file": str(env) if env is not None else None,
            "units": [planned[k] for k in sorted(planned, key=natural_key)], "protocol": dict(protocol),
            "config": cfg.recorded(), "models": models,
            "model_changes": [*(old or {}).get("model_changes", []), *changes], "pins": dict(pins)}


def _executor(family: UnitFamily, opts: RunOptions, cfg: AppConfig, units: list[Unit], plan: AgentPlan,
              serial: bool, scripted: bool) -> UnitExecutor:
    """Where the units are played: the family's own executor, else Ray, worker processes or this event loop."""
    executor = hook(family, "executor")(opts, cfg, units)
    if executor is not None:
        return executor  # type: ignore[no-any-return]
    if opts.executor == "ray":
        import_ray()
        check_endpoints(cfg, plan.roles)
        return RayUnitExecutor(opts.ray_address)
    # Worker processes only when every role has an HTTP endpoint: the embedded model's server belongs to one process.
    workers = within_ceiling(cfg, cfg.run.workers, plan.roles)
    remote = all(cfg.llm.chat_base_url(r) for r in plan.roles)  # type: ignore[arg-type]
    if workers > 1 and not serial and not scripted and remote:
        return ProcessUnitExecutor(workers)
    if plan.plugin and not scripted and remote:
        # A plug-in plays in one worker even so: an os._exit or a thread left running there is a failure of its
        # users, where in this process it would end the run with the plug-in's exit code or keep it alive.
        return ProcessUnitExecutor(1, serial=serial)
    return LocalExecutor(1 if serial else max(1, cfg.run.user_concurrency))


def plan_isolated(family: UnitFamily, agent: str, cfg: AppConfig, unit: Unit) -> None:
    """Make ``family``'s plan of ``agent`` once in a child process (:func:`~amemgym.agents.checker.build_isolated`):
    a plug-in whose import or factory fails, hangs or ends its process is refused in one line, before its code
    runs in this one.

    Raises:
        AMemGymError: the error planning ``agent`` raised in the child.
        AgentError: the plug-in's code ended the child.
    """
    build_isolated(agent, cfg, partial(_plan_in_child, family, unit))


def _plan_in_child(family: UnitFamily, unit: Unit, agent: str, cfg: AppConfig) -> None:
    family.plan(agent, cfg, LLMClient.from_config(cfg.llm, serial=True), unit)


def run_units(family: UnitFamily, cfg: AppConfig, env: Path, out_dir: Path, opts: RunOptions, *, console: Console,
              units: list[Unit] | None = None, make_client: ClientFactory | None = None,
              progress: Display | None = None, plan: AgentPlan | None = None,
              notes: Sequence[str | None] = (), client: LLMClient | None = None) -> int:
    """Run (or resume) every unit of ``env`` into ``out_dir``; print the summary; return the exit code.

    ``make_client`` builds the client from the run's config (None: its endpoints and cache, each role
    preflighted first; tests pass a scripted one, which is not preflighted). ``progress`` is the live display
    (None: the family's ``progress`` hook, else the engine's line of units done). ``plan`` is the agent's plan
    when the caller made it already (None: the family's ``plan``), and ``client`` the run's client (None: one
    built from the config). ``notes`` are printed once the directory is locked, so a refusal stays one line.

    Raises:
        ConfigError: an agent, executor or option the family cannot honour.
        DataError: a unit file that does not load, or a folder without units.
        RunError: ``out_dir`` is in use, or holds a run of another family, protocol or model.
        BackendUnavailable: a role's endpoint is unreachable, rejects the key or does not serve the model.
    """
    if opts.executor not in ("local", "ray"):
        raise ConfigError(f"unknown executor {shown_typed(opts.executor)}; use 'local' or 'ray'")
    if opts.ray_address and opts.executor != "ray":
        raise ConfigError("--ray-address needs --executor ray")
    units = units if units is not None else family.units(env, opts.limit)
    serial = opts.serial or cfg.run.serial
    if client is not None:
        llm = client
    else:
        llm = make_client(cfg) if make_client is not None else LLMClient.from_config(cfg.llm, serial=serial)
    plan = plan if plan is not None else family.plan(opts.agent, cfg, llm, units[0])
    rd = UnitRunDir(out_dir)
    try:
        # Before any endpoint is probed: another run's directory is refused even offline.
        old = check_protocol(family, rd, hook(family, "protocol")(plan, cfg), cfg, plan)
        if old is not None:
            check_planned(old, units, rd.root, env)  # another --env or a smaller --limit: before anything is written
    except RunError as mismatch:
        if not rd.root.is_dir():
            raise
        with run_lock(out_dir, "amemgym run"):  # a writer still holding the directory explains it better
            raise mismatch from None
    executor = _executor(family, opts, cfg, units, plan, serial, make_client is not None)
    if make_client is None:
        preflight(cfg.llm, plan.roles)
    with run_lock(out_dir, "amemgym run"):  # which also prepares out_dir: one line for a file or a read-only place
        for note in (*notes, embedded_note(cfg, plan.roles) if make_client is None else None):
            if note:
                console.print(note, highlight=False, markup=False)

        async def go() -> RunOutcome:
            try:
                return await play_units(family, units, plan, llm, cfg, out_dir, env=env, executor=executor,
                                        progress=progress, allow_model_change=opts.allow_model_change,
                                        make_client=make_client)
            finally:
                await llm.aclose()

        # plug-in calls are guarded with the run's limits
        set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)
        outcome = asyncio.run(go())
    hook(family, "run_summary")(console, out_dir, outcome)
    for row in outcome.rows:
        why = (row.record or {}).get("checkpoint_discarded") if row.status == "done" else None
        if why:
            console.print(styled("yellow", f"note: {row.unit.label}: ", str(why)), highlight=False, soft_wrap=True)
    if outcome.failures:
        count = len({f["user"] for f in outcome.failures})  # a family's UnitFailed may give several per unit
        console.print(styled("red", f"{count} {family.noun} failed", f" (see {rd.failures_path}); re-run the same "
                             "command to retry them"), highlight=False)
    elif outcome.metrics.get("complete") is False:
        missing = [str(m) for m in outcome.metrics.get("missing") or []]
        which = f": {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}" if missing else ""
        console.print(styled("red", "the run is not complete", f": {len(missing) or 'some'} planned {family.noun} "
                             f"without results{which} (see {rd.metrics_path}); re-run the same command to finish "
                             "them"), highlight=False)
    return 1 if outcome.failures or outcome.metrics.get("complete") is False else 0


def _latest_problems(rd: UnitRunDir, last: dict[str, Any]) -> list[dict[str, Any]]:
    """The endpoint problems of the latest invocation that asked the model anything: a re-run with nothing left to
    ask keeps the verdict of the one before (its replies are what is scored), and one that redid the work on a
    healthy endpoint clears it (a reply that was unusable is never cached, so none of them is scored)."""
    attempts = sum(role_attempts(c) for role, c in last.items() if role != "total" and isinstance(c, dict))
    if attempts:
        return endpoint_problems(last)
    try:
        previous = json.loads(rd.metrics_path.read_text(encoding="utf-8")).get("endpoint_problems")
    except (OSError, ValueError, AttributeError):
        previous = None
    return [p for p in previous if isinstance(p, dict)] if isinstance(previous, list) else []


def embedded_note(cfg: AppConfig, roles: Sequence[str]) -> str | None:
    """The line that tells a user which of ``roles`` run on the embedded model, whose calls can take minutes."""
    local = [r for r in roles if r != "embedder" and cfg.llm.chat_base_url(r) is None]  # type: ignore[arg-type]
    if not local:
        return None
    names = " and ".join([", ".join(local[:-1]), local[-1]] if len(local) > 1 else local)
    return (f"note: the {names} role{'s' if len(local) > 1 else ''} run{'' if len(local) > 1 else 's'} on the "
            "embedded model on this machine's CPU: one call can take minutes, so progress may pause for a while")


@dataclass
class RunOutcome:
    """What one invocation of a run produced.

    Attributes:
        metrics: ``metrics.json`` as written.
        failures: what failed this time (redacted, as in ``failures.json``).
        rows: every unit with its record (None when it has not finished) and what happened to it.
        found: the finished units' records.
        usage: what this invocation spent.
        seconds: its wall time, from the lock to ``metrics.json``.
    """

    metrics: dict[str, Any]
    failures: list[dict[str, Any]]
    rows: list[UnitRow]
    found: list[Found]
    usage: UsageLedger
    seconds: float


async def play_units(family: UnitFamily, units: list[Unit], plan: AgentPlan, llm: LLMClient, cfg: AppConfig,
                     out_dir: Path, *, env: Path | None, executor: UnitExecutor | None = None,
                     progress: Display | None = None, allow_model_change: bool = False,
                     make_client: ClientFactory | None = None, only: Collection[str] | None = None) -> RunOutcome:
    """Play (or resume) ``units`` into ``out_dir`` and write its root files; the caller holds the run lock.

    The earlier manifest is checked (and adopted by the family's ``adopt`` hook), the served models are pinned,
    the family's pins made or kept and the manifest written, all before the first unit call; then the units
    without a finished record are played on ``executor`` (None: this event loop, ``run.user_concurrency`` at
    a time), with usage flushed as they go; then ``failures.json`` and ``metrics.json``. ``only`` restricts the
    play to those unit ids (the manifest and metrics still cover every unit). The caller closes ``llm``.

    Raises:
        RunError: ``out_dir`` holds a run of another family, protocol or model.
    """
    t0 = time.perf_counter()
    rd = UnitRunDir(out_dir)
    prepare_out_dir(out_dir)
    remove_stale_temps(out_dir)  # left by a killed invocation; this one holds the lock
    llm.sample_seed = cfg.run.seed  # every call of this run (each trial has its own seed) is its own sample
    protocol = hook(family, "protocol")(plan, cfg)
    old = check_protocol(family, rd, protocol, cfg, plan)
    if old is not None:
        check_planned(old, units, rd.root, env)
        old = dict(hook(family, "adopt")(old, units, rd.root))
    if executor is None:
        executor = LocalExecutor(1 if cfg.run.serial else max(1, cfg.run.user_concurrency))
    progress = progress or hook(family, "progress")(units, rd.root) or UnitProgress(noun=family.noun)
    earlier = {u.id: finished_record(rd, u, family) for u in units}  # records this invocation does not touch
    skipped = {k for k, record in earlier.items() if record is not None}
    todo = [u for u in units if u.id not in skipped and (only is None or u.id in only)]
    book = UsageBook(out_dir)
    # Played work beside a lost usage count means calls that no file counts any more (engine/usage.py).
    book.fold_pending(resumed=old is not None, played=any(rd.unit_dir(u.id).exists() for u in units))
    live = LiveUsage(llm.ledger)
    invocation = uuid.uuid4().hex
    flusher: asyncio.Task[None] | None = None
    journal = llm.usage_journal = book.journal(invocation)
    failures: list[dict[str, Any]] = []
    begun = old is not None  # whether the directory holds a run (its manifest), so usage belongs to one
    try:
        described = await llm.resolve_models(plan.pinned or plan.roles)
        served = {role: d["served"] for role, d in described.items() if "served" in d}
        models, changes = pin_models(out_dir, (old or {}).get("models") or {}, described,
                                     allow_change=allow_model_change)
        pins = await family.pins(plan, cfg, llm, (old or {}).get("pins") or {})
        base = _manifest(family, env, units, old, protocol, cfg, models, changes, pins)
        manifest = hook(family, "manifest")(base, old, units, plan, cfg)
        rd.write_manifest(manifest, getattr(family, "manifest_record", UnitManifest))
        begun = True
        book.start(invocation)
        first = served.get(plan.roles[0]) if plan.roles else None
        run_fields = {"run_seed": cfg.run.seed, "agent_model": first, "model_changes": base["model_changes"]}
        flusher = asyncio.create_task(book.flush_forever(invocation, live.now))
        progress.start(len(todo), live.now)
        # The models that answered earlier invocations: a resume refuses replies from another (an alias moved),
        # and records the move when it is allowed.
        answered_before = book.answered()
        held = ModelPins(served, {} if allow_model_change else answered_before)
        llm.hold_answered(held.answered)
        ctx = PlayContext(family, plan, pins, llm, cfg, rd, held, run_fields, live, make_client, progress.unit_done)
        failures.extend(await executor.play(ctx, todo))
    finally:
        progress.close()
        if flusher is not None:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
        journal.close()
        llm.usage_journal = None
        if begun:
            book.save(invocation, llm.ledger)
        else:
            book.discard()
    moved = [c for c in answered_changes(answered_before, {r: u.answered for r, u in llm.ledger.roles.items()})
             if c["role"] not in {pinned["role"] for pinned in changes}]  # a served change already says it
    if moved:
        manifest = {**manifest, "model_changes": [*(manifest.get("model_changes") or []), *moved]}
        rd.write_manifest(manifest, getattr(family, "manifest_record", UnitManifest))
    rows, found = [], []
    failed = {f["user"]: f["error"] for f in failures}
    for u in units:
        record = earlier[u.id] if u.id in skipped else finished_record(rd, u, family)
        if record is None or u.id in failed:
            rows.append(UnitRow(u, None, f"failed: {failed.get(u.id, 'no results')}"))
            continue
        rows.append(UnitRow(u, record, "done earlier (skipped)" if u.id in skipped else "done"))
        found.append(Found(rd.unit_dir(u.id), str(out_dir), record))
    written = rd.write_failures(failures)
    metrics = dict(hook(family, "run_metrics")(units, out_dir, found, cfg))
    usage = book.cumulative()
    usage.pop("format_version", None)
    metrics.update({"agent": plan.agent, "usage": usage,
                    "endpoint_problems": _latest_problems(rd, usage.get("last_invocation") or {}),
                    "wall_seconds_last_invocation": round(time.perf_counter() - t0, 3), "failures": written})
    rd.write_metrics(metrics, getattr(family, "metrics_record", UnitMetrics))
    return RunOutcome(metrics, written, rows, found, llm.ledger, time.perf_counter() - t0)


