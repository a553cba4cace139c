"""Scale-out: one Ray task per user episode, writing into a shared run directory.

The on-policy chain is sequential inside a user, so a user's episode is the unit of distribution. Each
task runs the same :class:`~amemgym.families.statetrack.episode.Episode` as the local executor, inside ``asyncio.run``,
with its own :class:`~amemgym.llm.client.LLMClient` built from the run's config, and writes
``users/<id>/...`` into the run directory, which must be on a filesystem every node sees. The driver then
merges the tasks' usage and failures; the runner writes traces and metrics exactly as for a local run.

Concurrency per endpoint holds across the cluster by a fixed share: the driver keeps at most ``slots``
tasks in flight, and each task's client may have ``max_concurrency // slots`` calls in flight per
endpoint, so the sum never exceeds the endpoint's ``max_concurrency``.

Ray is imported only when a run actually uses this executor.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.registry import AgentSpec
from ..config import AppConfig
from ..errors import ConfigError, RunError
from ..families.statetrack.data.model import UserEnv
from ..families.statetrack.episode import Episode, EpisodeEvents, PeriodHook
from ..families.statetrack.layout import RunDir
from ..llm.client import LLMClient
from ..llm.usage import UsageLedger
from ..records import State, read_record

if TYPE_CHECKING:
    from ..families.statetrack.runner import Runner

#: Builds a task's client from the task's config (tests swap in one with a short backoff or a fault).
ClientFactory = Callable[[AppConfig], LLMClient]

#: Chat roles an episode calls; each needs an HTTP endpoint under Ray (see :func:`check_endpoints`).
EPISODE_ROLES: tuple[str, ...] = ("agent", "memory", "simulator")


def import_ray() -> Any:
    """The ``ray`` module, or a ConfigError naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'amemgym[ray]'") from None
    return ray


def default_client(cfg: AppConfig) -> LLMClient:
    """The client a task uses unless told otherwise: the run's config and its persistent cache."""
    return LLMClient.from_config(cfg.llm, serial=cfg.run.serial)


def start_ray(address: str | None, init_kwargs: dict[str, Any]) -> tuple[Any, bool]:
    """Ray, initialised: the cluster this process already joined, else ``address`` (None: a local one).

    Returns the module and whether this call started it (the caller then shuts it down).

    Raises:
        RunError: when the cluster cannot be started or joined.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise RunError(f"cannot start or join Ray at {address or 'a local cluster'}: {exc}") from None
    return ray, True


def check_endpoints(cfg: AppConfig, roles: tuple[str, ...] = EPISODE_ROLES) -> dict[str, str]:
    """The HTTP base URL of every role a task calls; a ConfigError if one would use the embedded model.

    The embedded llama.cpp server lives in one process per machine; under Ray every worker would start
    its own, so scale-out requires served endpoints (vLLM, SGLang, a hosted API).
    """
    urls: dict[str, str] = {}
    for role in roles:
        url = cfg.llm.chat_base_url(role)  # type: ignore[arg-type]
        if not url:
            raise ConfigError(
                f"the ray executor needs an HTTP endpoint for role {role!r} (the embedded model is per machine); "
                "set llm.default.base_url, OPENAI_BASE_URL or a --models file"
            )
        urls[role] = url
    return urls


def task_config(cfg: AppConfig, slots: int, roles: tuple[str, ...] = EPISODE_ROLES) -> AppConfig:
    """The config a task runs with: endpoints pinned and each endpoint's concurrency divided by ``slots``.

    The driver's ``OPENAI_BASE_URL`` is written into the config because workers on other nodes do not
    inherit the driver's environment. API keys are not: they stay in each node's environment variables.
    """
    urls = check_endpoints(cfg, roles)
    overrides = {role: dict(over) for role, over in cfg.llm.roles.items()}
    for role in dict.fromkeys((*EPISODE_ROLES, *roles, "embedder", "judge", "generator")):
        ep = cfg.llm.endpoint(role)  # type: ignore[arg-type]
        over = overrides.setdefault(role, {})  # type: ignore[arg-type]
        over["max_concurrency"] = max(1, ep.max_concurrency // slots)
        if role in urls and not ep.base_url:
            over["base_url"] = urls[role]
    out = cfg.model_copy(deep=True)
    out.llm.roles = overrides
    return out


def task_slots(cfg: AppConfig, n_users: int, limit: int | None = None,
               roles: tuple[str, ...] = EPISODE_ROLES) -> int:
    """How many episodes run at once: the user concurrency, capped so every endpoint keeps >= 1 permit."""
    slots = 1 if cfg.run.serial else (limit or cfg.run.user_concurrency)
    smallest = min(cfg.llm.endpoint(r).max_concurrency for r in roles)  # type: ignore[arg-type]
    return max(1, min(slots, smallest, n_users))


def user_finished(rundir: RunDir, user: UserEnv) -> bool:
    """Whether a user's episode and every evaluation are on disk (a re-run has nothing to do for it)."""
    state_path = rundir.state(user.id)
    if not state_path.exists():
        return False
    try:
        state = read_record(state_path, State)
    except RunError:
        return False  # the episode itself reports the broken file
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

    async def poll_forever(self, every: float = 1.0) -> None:
        """:meth:`poll` every ``every`` seconds until cancelled."""
        while True:
            await asyncio.sleep(every)
            await asyncio.to_thread(self.poll)


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
        address: the Ray cluster to join (``ray.init(address=...)``); None starts or joins a local one.
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

    def _ensure_ray(self) -> tuple[Any, bool]:
        return start_ray(self.address, self.init_kwargs)

    async def run_users(self, runner: Runner, users: list[UserEnv], events: EpisodeEvents) -> None:
        """Run the users' episodes as Ray tasks, at most ``slots`` at a time, and merge what they return."""
        finished = {u.id for u in users if user_finished(runner.rundir, u)}
        self.skipped = [u.id for u in users if u.id in finished]
        todo = [u for u in users if u.id not in finished]
        if not todo:
            return
        slots = task_slots(runner.cfg, len(todo), self.slots)
        cfg = task_config(runner.cfg, slots)
        ray, started = self._ensure_ray()
        remote = ray.remote(max_retries=self.max_retries, retry_exceptions=False,
                            num_cpus=self.num_cpus)(run_episode_job)
        gate = asyncio.Semaphore(slots)
        ledger = UsageLedger()

        async def one(user: UserEnv) -> None:
            job = EpisodeJob(user=user, spec=runner.spec, cfg=cfg, rundir=runner.rundir.root.resolve(),
                             off_policy=runner.off_policy.root.resolve() if runner.off_policy else None,
                             after_period=runner.after_period, make_client=self.make_client)
            async with gate:
                try:
                    result = await remote.remote(job)
                except ray.exceptions.RayError as exc:
                    # A task out of retries is one user's failure, recorded like any other.
                    events.failures.append({"user": user.id, "period": None, "stage": "ray_task",
                                            "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})
                    return
            ledger.merge(UsageLedger.from_dict(result["usage"]))
            events.failures.extend(result["failures"])

        watcher = FileProgress(runner.rundir, todo, events)
        poller = asyncio.create_task(watcher.poll_forever())
        try:
            await asyncio.gather(*(one(u) for u in todo))
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
            watcher.poll()
            runner.llm.ledger.merge(ledger)
            if started:
                ray.shutdown()
