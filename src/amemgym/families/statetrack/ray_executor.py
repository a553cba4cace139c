"""Statetrack on the engine's Ray executor: one task per user episode, writing into a shared run directory.

The on-policy chain is sequential inside a user, so a user's episode is the unit of distribution. The Ray
loop, cluster start, endpoint check, per-task config and slot count are the engine's
(:mod:`amemgym.engine.ray`), the same as every family's; this module brings what is statetrack's: the
episode job (each task runs the same :class:`~amemgym.families.statetrack.episode.Episode` as the local
executor, inside ``asyncio.run``, with its own client built from the run's config; its records land in
``users/<id>/...`` through the engine's unit writer, so the run directory must be on a filesystem every node
sees), the test for a finished user, and the progress watcher that reads the run directory (polled by the
engine's :func:`~amemgym.engine.progress.poll_forever`, as the process executor's is). The driver merges
the tasks' usage and failures; the runner writes traces and metrics exactly as for a local run.

Ray is imported only when a run actually uses this executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agents.registry import AgentSpec
from ...config import AppConfig
from ...engine import ray as engine_ray
from ...engine.contract import RemoteUnit
from ...engine.ray import default_client, import_ray, run_on_ray, start_ray
from ...errors import RunError
from ...llm.client import LLMClient
from ...llm.usage import UsageLedger
from .data.model import UserEnv
from .episode import Episode, EpisodeEvents, PeriodHook
from .layout import RunDir

if TYPE_CHECKING:
    from .runner import Runner

__all__ = ["EPISODE_ROLES", "EpisodeJob", "FileProgress", "RayExecutor", "check_endpoints", "default_client",
           "import_ray", "run_episode_job", "start_ray", "task_config", "task_slots", "user_finished"]

#: Builds a task's client from the task's config (tests swap in one with a short backoff or a fault).
ClientFactory = Callable[[AppConfig], LLMClient]

#: Chat roles an episode calls; each needs an HTTP endpoint under Ray (see :func:`check_endpoints`).
EPISODE_ROLES: tuple[str, ...] = ("agent", "memory", "simulator")


def check_endpoints(cfg: AppConfig, roles: Sequence[str] = EPISODE_ROLES) -> dict[str, str]:
    """The engine's endpoint check, by default for the roles an episode calls."""
    return engine_ray.check_endpoints(cfg, roles)


def task_config(cfg: AppConfig, slots: int, roles: Sequence[str] = EPISODE_ROLES) -> AppConfig:
    """The engine's per-task config, by default for the roles an episode calls."""
    return engine_ray.task_config(cfg, slots, roles)


def task_slots(cfg: AppConfig, n_users: int, limit: int | None = None, roles: Sequence[str] = EPISODE_ROLES) -> int:
    """The engine's slot count, by default for the roles an episode calls."""
    return engine_ray.task_slots(cfg, n_users, limit, roles)


def user_finished(rundir: RunDir, user: UserEnv) -> bool:
    """Whether a user's episode and every evaluation are on disk (a re-run has nothing to do for it)."""
    try:
        state = rundir.state(user.id)
    except RunError:
        return False  # the episode itself reports the broken file
    if state is None:
        return False
    done = state.period >= len(user.periods) and state.session == 0
    return done and all(rundir.evaluation(user.id, p).exists() for p in range(len(user.periods)))


class FileProgress:
    """Reports sessions and evaluations that tasks on other processes finish, by watching the run directory.

    A session counts when its record line is complete in ``sessions.jsonl``; an evaluation when its file
    exists. Only what appears after the watcher started is reported, as the local executor does.
    """

    def __init__(self, rundir: RunDir, users: list[UserEnv], events: EpisodeEvents) -> None:
        self.rundir, self.users, self.events = rundir, users, events
        self._offsets = dict.fromkeys((u.id for u in users), 0)  # bytes of sessions.jsonl already counted
        for u in users:
            self._new_session_lines(u.id)
        self._evals = {u.id: self._evaluated(u) for u in users}

    def _new_session_lines(self, user_id: str) -> int:
        """Complete lines appended since the last call (the file is append-only; only new bytes are read)."""
        try:
            with self.rundir.sessions(user_id).open("rb") as fh:
                fh.seek(self._offsets[user_id])
                new = fh.read()
        except FileNotFoundError:
            return 0
        complete = new.rfind(b"\n") + 1  # a line still being written is counted on a later poll
        self._offsets[user_id] += complete
        return new.count(b"\n", 0, complete)

    def _evaluated(self, user: UserEnv) -> set[int]:
        return {p for p in range(len(user.periods)) if self.rundir.evaluation(user.id, p).exists()}

    def poll(self) -> None:
        """Report what appeared since the last poll."""
        for user in self.users:
            for _ in range(self._new_session_lines(user.id)):
                self.events.on_session(user.id, -1, -1)
            done = self._evaluated(user)
            for period in sorted(done - self._evals[user.id]):
                self.events.on_eval(user.id, period)
            self._evals[user.id] |= done


@dataclass(frozen=True)
class EpisodeJob:
    """Everything one Ray task needs to run one user's episode (pickled to the worker)."""

    user: UserEnv
    spec: AgentSpec
    cfg: AppConfig
    rundir: Path
    off_policy: Path | None
    after_period: PeriodHook | None
    make_client: ClientFactory
    #: The driver's call journal (its file and invocation) for workers on the driver's machine; None for Ray.
    journal: tuple[Path, str] | None = None


def run_episode_job(job: EpisodeJob) -> dict[str, Any]:
    """Run one episode to completion in this process; returns its usage ledger and failures as plain data."""

    async def go() -> dict[str, Any]:
        llm = job.make_client(job.cfg)
        llm.sample_seed = job.cfg.run.seed  # as on the driver: the trial's seed goes into every call
        events = EpisodeEvents()
        try:
            await Episode(job.user, job.spec, llm, job.cfg, RunDir(job.rundir),
                          off_policy=RunDir(job.off_policy) if job.off_policy else None,
                          events=events, after_period=job.after_period).run()
        finally:
            await llm.aclose()
            if llm.cache is not None:
                llm.cache.close()
        return {"user": job.user.id, "usage": llm.ledger.to_dict(), "failures": events.failures}

    return asyncio.run(go())


@dataclass
class RayExecutor:
    """Runs each user's episode as a Ray task; pass it to :meth:`Runner.run` as ``executor``.

    Args:
        address: the Ray cluster to join (the engine's ``start_ray``); None starts or joins a local one.
            If Ray is already initialised in this process, that cluster is used and left running.
        max_retries: how often Ray re-runs a task whose worker died; the retry resumes from the
            episode's checkpoint, and finished calls come back from the response cache.
        slots: episodes in flight at once; default ``run.user_concurrency``, capped by every endpoint's
            ``max_concurrency`` (see :func:`task_slots`).
        make_client: builds each task's client from the task's config.
        num_cpus: CPUs Ray reserves per task; episodes mostly wait on the network, so fractions are fine.
        init_kwargs: extra ``ray.init`` arguments when this executor starts Ray.

    Progress comes from the run directory the tasks write (it must be shared anyway): finished sessions
    and evaluations are reported as their files appear. Usage shows once the tasks return.

    Usage spent by a task attempt that died is not counted (its ledger died with it); its finished calls
    are in the cache, so the retry does not pay for them again.
    """

    address: str | None = None
    max_retries: int = 3
    slots: int | None = None
    make_client: ClientFactory = default_client
    num_cpus: float = 1.0
    init_kwargs: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    async def run_users(self, runner: Runner, users: list[UserEnv], events: EpisodeEvents) -> None:
        """Run the users' episodes on the engine's Ray executor, at most ``slots`` at a time; merge what they return."""
        finished = {u.id for u in users if user_finished(runner.rundir, u)}
        self.skipped = [u.id for u in users if u.id in finished]
        todo = [u for u in users if u.id not in finished]
        if not todo:
            return
        slots = task_slots(runner.cfg, len(todo), self.slots)
        cfg = task_config(runner.cfg, slots)
        ledger = UsageLedger()
        tasks = [RemoteUnit(u.id, EpisodeJob(user=u, spec=runner.spec, cfg=cfg, rundir=runner.rundir.root.resolve(),
                                          off_policy=runner.off_policy.root.resolve() if runner.off_policy else None,
                                          after_period=runner.after_period, make_client=self.make_client))
                 for u in todo]

        def finished_task(task: RemoteUnit, result: dict[str, Any]) -> None:
            ledger.merge(UsageLedger.from_dict(result["usage"]))
            events.failures.extend(result["failures"])

        def lost(task: RemoteUnit, exc: Exception) -> None:
            # A task out of retries is one user's failure, recorded like any other.
            events.failures.append({"user": task.unit, "period": None, "stage": "ray_task",
                                    "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})

        try:
            await run_on_ray(run_episode_job, tasks, slots=slots, address=self.address, on_result=finished_task,
                             on_lost=lost, poll=FileProgress(runner.rundir, todo, events).poll,
                             init_kwargs=self.init_kwargs, max_retries=self.max_retries, num_cpus=self.num_cpus)
        finally:
            runner.llm.ledger.merge(ledger)
