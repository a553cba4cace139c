"""Statetrack on the engine: each user's episode is one unit of :func:`amemgym.engine.runner.play_units`.

The engine owns the run (lock, manifest write, served-model pins, usage, progress, failures, executors,
``metrics.json``); this module says what is statetrack's in it, through the contract's hooks:

- a unit is a user (``users/<folder>``, its parsed :class:`~.data.model.UserEnv` as ``data``), and every unit's
  digest is the environment's hash, which the protocol pins;
- ``play`` runs the user's :class:`~.episode.Episode` (its records go to the engine's writer for the user's
  folder) and then its ``trace.jsonl``, and raises :class:`~amemgym.engine.contract.UnitFailed` with the
  episode's failure entries (each naming the period and stage), so a failed user is retried on a re-run;
- a user is finished when its checkpoint is past the last period and every evaluation is on disk;
- the manifest and ``metrics.json`` keep statetrack's own shape (:class:`~amemgym.records.Manifest`,
  :class:`~amemgym.records.Metrics`): users, their folders, periods, prompt hashes, the ``--limit`` cut;
  metrics over every (user, period) with the answer rule and the protocol settings;
- ``run.workers = 0`` (auto) spreads users over worker processes when there are enough of them;
- the live display counts sessions and evaluations from the files the users write, whichever process writes.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...agents import resolve_agent
from ...agents.registry import AgentSpec
from ...engine.contract import AgentPlan, Unit, UnitFailed
from ...engine.processes import ProcessUnitExecutor, within_ceiling
from ...errors import DataError, RunError
from ...llm.preflight import run_roles
from ...prompts import template_hashes
from ...records import RUN_FORMAT_VERSION, Manifest, Metrics, UpperBoundRecord, read_record
from .cut import first_users
from .data.io import environment_sha256, load_environment
from .data.model import Environment, UserEnv
from .episode import RUN_ROLES, Episode, EpisodeEvents, PeriodHook
from .layout import RunDir, adopt_legacy_folders, folder_clashes, user_folder
from .progress import RunProgress
from .protocol import check_manifest, protocol_of
from .results import compute_metrics, protocol_settings, write_trace
from .resume import lost_fix, refuse_lost_sessions
from .summary import print_summary

if TYPE_CHECKING:
    from rich.console import Console

    from ...config import AppConfig
    from ...engine.checkpoint import Checkpoint
    from ...engine.contract import UnitRow
    from ...engine.executor import UnitExecutor
    from ...engine.runner import RunOptions, RunOutcome
    from ...llm.client import LLMClient

__all__ = ["STATETRACK_UNITS", "USERS_PER_WORKER", "EpisodeOptions", "StatetrackUnits", "auto_workers",
           "environment_of", "statetrack_plan", "units_of", "user_finished"]


@dataclass(frozen=True)
class EpisodeOptions:
    """What every user's episode of a run needs besides its user (pickled to worker processes, so small).

    Attributes:
        spec: the agent.
        off_policy: the run directory whose conversations are replayed (None: on-policy).
        after_period: called after each period's evaluation (self-evolution), or None.
        environment_cut: a ``--limit`` run's cut of its file, recorded in a new manifest.
    """

    spec: AgentSpec
    off_policy: Path | None = None
    after_period: PeriodHook | None = None
    environment_cut: dict[str, Any] | None = None


#: Users per worker process below which another worker is not worth its start (about a second of imports).
USERS_PER_WORKER = 8


def auto_workers(cfg: AppConfig, n_users: int, roles: tuple[str, ...]) -> int:
    """How many processes ``run.workers = 0`` (auto) means for ``n_users`` users.

    One per core, at most one per ``USERS_PER_WORKER`` users and no more than the lowest endpoint ceiling
    (:func:`~amemgym.engine.processes.within_ceiling`), and 1 whenever a role runs on the embedded model (its
    llama.cpp server belongs to one process) or the run is serial. One event loop's CPU (the HTTP
    client, request and reply JSON, records) fills a core before a busy server's slots are full
    (docs/design.md §10); the engine's worker processes spread the users over more.
    """
    if cfg.run.serial or any(cfg.llm.chat_base_url(r) is None for r in roles):  # type: ignore[arg-type]
        return 1
    return within_ceiling(cfg, min(os.cpu_count() or 1, n_users // USERS_PER_WORKER), roles)


def units_of(env: Environment, sha256: str) -> list[Unit]:
    """One unit per user of ``env`` (whose hash is ``sha256``), in the environment's order.

    Raises:
        RunError: two users would share a folder.
    """
    clashes = folder_clashes([u.id for u in env.users])
    if clashes:
        a, b = clashes[0]
        raise RunError(f"user ids {a!r} and {b!r} would share the folder users/{user_folder(a)} (names that "
                       "differ only in letter case are one folder on macOS and Windows); rename one of them")
    return [Unit(id=f"users/{user_folder(u.id)}", path=Path(), digest=sha256, group="all", label=u.id, data=u)
            for u in env.users]


def environment_of(units: Sequence[Unit]) -> Environment:
    """The environment of the users ``units`` carry (validated when the file was read)."""
    return Environment.model_construct(users=[u.data for u in units])


def statetrack_plan(spec: AgentSpec, protocol: Mapping[str, Any], roles: Sequence[str], *,
                    off_policy: Path | None = None, after_period: PeriodHook | None = None,
                    environment_cut: dict[str, Any] | None = None) -> AgentPlan:
    """The engine's plan of a statetrack run of ``spec``: it calls ``roles`` and pins the run roles' models."""
    options = EpisodeOptions(spec, off_policy.resolve() if off_policy else None, after_period, environment_cut)
    return AgentPlan(agent=spec.name, roles=tuple(roles), protocol=dict(protocol), options=options,
                     pinned=RUN_ROLES, plugin=spec.plugin)


def user_finished(rundir: RunDir, user: UserEnv) -> bool:
    """Whether a user's episode, every evaluation and the upper bound are on disk (a re-run has nothing to do
    for it).

    Raises:
        RunError: the user is finished but its upper-bound answers do not read (the run cannot be scored), or
            sessions its checkpoint counts as played are not recorded.
    """
    # The files' existence first: the engine asks this of every user while a run goes on, and the checkpoint
    # holds the agent's whole snapshot.
    needed = [rundir.upper_bound(user.id), *(rundir.evaluation(user.id, p) for p in range(len(user.periods)))]
    if not all(path.exists() for path in needed):
        return False
    try:
        state = rundir.state(user.id)
    except RunError:
        return False  # the episode itself reports the broken file
    if state is None or state.period < len(user.periods) or state.session != 0 or state.hook_pending:
        return False  # (a last period's self-evolution cycle still to run counts as unfinished)
    refuse_lost_sessions(rundir, user, (state.period, state.session), lost_fix(rundir, user))
    read_record(rundir.upper_bound(user.id), UpperBoundRecord)
    return True


class StatetrackUnits:
    """The unit family of statetrack runs (see the module docstring). It holds nothing of a run."""

    name = "statetrack"
    noun = "users"
    manifest_record = Manifest
    metrics_record = Metrics

    def units(self, env: Path, limit: int | None) -> list[Unit]:
        """The users of the environment file ``env`` (its first ``limit``)."""
        data = first_users(load_environment(env, limit=limit), limit)
        return units_of(data, environment_sha256(data))

    def plan(self, agent: str, cfg: AppConfig, llm: LLMClient, first: Unit) -> AgentPlan:
        """An on-policy run of the registered agent ``agent``."""
        spec = resolve_agent(agent)
        return statetrack_plan(spec, protocol_of(first.digest, spec, cfg, None), run_roles(spec.roles))

    async def pins(self, plan: AgentPlan, cfg: AppConfig, llm: LLMClient, pinned: Mapping[str, Any]) -> dict[str, Any]:
        """Statetrack makes no choice to pin beyond the protocol and the models."""
        return {}

    async def play(self, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: LLMClient, cfg: AppConfig,
                   checkpoint: Checkpoint) -> None:
        """Run (or resume) the user's episode and its evaluations, then write its trace.

        Raises:
            UnitFailed: a session, evaluation or the upper bound failed (the entries name which); what finished
                is on disk and a re-run resumes from it.
            DataError: a record in the user's folder does not read.
        """
        options: EpisodeOptions = plan.options
        rundir = RunDir(checkpoint.run_dir)
        events = EpisodeEvents()
        try:
            await Episode(unit.data, options.spec, llm, cfg, rundir,
                          off_policy=RunDir(options.off_policy) if options.off_policy else None,
                          events=events, after_period=options.after_period).run()
            await write_trace(unit.data, rundir)
        except RunError as exc:
            # What escapes an episode is a record of the run directory that does not read (the model's and
            # the agent's errors are its failure entries): bad input, which stops the whole run in one line.
            raise DataError(str(exc)) from None
        if events.failures:
            raise UnitFailed(events.failures)

    def summary(self, console: Console, rows: list[UnitRow]) -> None:
        """Nothing per user: statetrack's summary is over the run's metrics (:meth:`run_summary`)."""

    # -- hooks --------------------------------------------------------------------------------------------------

    def protocol(self, plan: AgentPlan, cfg: AppConfig) -> dict[str, Any]:
        """The plan's protocol as it is (environment hash, agent, rounds, run settings, off-policy source)."""
        return dict(plan.protocol)

    def check_resume(self, old: Mapping[str, Any], protocol: Mapping[str, Any], root: Path) -> dict[str, Any]:
        """Every protocol entry must match; a run setting added since, at its default, is no change."""
        return check_manifest(old, protocol, root)

    def adopt(self, old: Mapping[str, Any], units: Sequence[Unit], root: Path) -> dict[str, Any]:
        """Move user folders an earlier version named by slug alone to their one-to-one names."""
        if "user_folders" in old:
            return dict(old)
        adopt_legacy_folders(root, [u.data.id for u in units])
        return {**old, "user_folders": {u.data.id: user_folder(u.data.id) for u in units}}

    def manifest(self, base: Mapping[str, Any], old: Mapping[str, Any] | None, units: Sequence[Unit],
                 plan: AgentPlan, cfg: AppConfig) -> dict[str, Any]:
        """Statetrack's manifest: a resume keeps the first invocation's and updates only its models."""
        users: list[UserEnv] = [u.data for u in units]
        periods = len(users[0].periods) if users else 0
        if old is not None:
            if users and old.get("periods") != periods:
                # The environment's digest matched, so the manifest itself was changed: every reader would
                # disagree with the records.
                raise RunError(f"the run's manifest.json says periods is {old.get('periods')!r} but its environment "
                               f"has {periods}; the manifest is damaged (use a new --out directory)")
            return {**old, "models": base["models"], "model_changes": base["model_changes"]}
        options: EpisodeOptions = plan.options
        manifest = {
            "format_version": RUN_FORMAT_VERSION, "amemgym_version": __version__,
            "python": platform.python_version(), "created": base["created"],
            "environment_file": base["environment_file"], "users": [u.id for u in users],
            "user_folders": {u.id: user_folder(u.id) for u in users},
            "periods": periods, "protocol": base["protocol"],
            "config": base["config"], "models": base["models"], "model_changes": base["model_changes"],
            "prompt_sha256": template_hashes(),
        }
        if options.environment_cut is not None:
            manifest["environment_cut"] = options.environment_cut
        return manifest

    def finished(self, unit: Unit, root: Path) -> dict[str, Any] | None:
        """``{"user": id}`` once the user's episode and every evaluation are on disk, else None."""
        return {"user": unit.data.id} if user_finished(RunDir(root), unit.data) else None

    def run_metrics(self, units: Sequence[Unit], root: Path, found: Sequence[Any], cfg: AppConfig) -> dict[str, Any]:
        """Every statetrack number over every (user, period), with the protocol settings they were made under."""
        metrics = compute_metrics(environment_of(units), RunDir(root), cfg.run.answer_rule)
        metrics["protocol_settings"] = protocol_settings(cfg.run)
        return metrics

    def executor(self, opts: RunOptions, cfg: AppConfig, units: Sequence[Unit]) -> UnitExecutor | None:
        """Worker processes when ``run.workers`` is auto (0) and there are users enough for more than one."""
        if opts.executor != "local" or cfg.run.workers != 0:
            return None
        workers = auto_workers(cfg, len(units), RUN_ROLES)
        if workers < 2:
            return None

        return ProcessUnitExecutor(workers)

    def progress(self, units: Sequence[Unit], root: Path) -> RunProgress:
        """Sessions and evaluations done, read from the users' files."""
        return RunProgress().watch([u.data for u in units], root)

    def run_summary(self, console: Console, root: Path, outcome: RunOutcome) -> None:
        """The metrics table, what each number means, flags, answers and usage."""
        print_summary(console, outcome.metrics, root)


#: The one instance the engine runs statetrack through.
STATETRACK_UNITS = StatetrackUnits()
