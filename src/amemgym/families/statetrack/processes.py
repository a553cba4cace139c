"""Worker processes on one machine: the users split into groups, each group's episodes on its own event loop.

One event loop runs every user's episode, and at a few hundred calls a second its CPU (the HTTP client,
request and reply JSON, records) fills one core before a busy server's slots are full (docs/design.md §10).
``run.workers`` spreads the users over that many processes: user ``i`` goes to group ``i % workers``,
each group runs the same :class:`~amemgym.families.statetrack.episode.Episode` code with its own
:class:`~amemgym.llm.client.LLMClient` (the same config and persistent cache, the endpoint's
``max_concurrency`` divided between the groups) and writes ``users/<id>/...`` as the local executor does.
Every call's content depends only on the user, its seeds and the replies, never on which process or
in what order it ran, so the run directory is the same as from one process. The processes themselves, their
usage reports and their end with the driver are the engine's (:mod:`amemgym.engine.processes`, which plays
any unit family's units the same way); what is statetrack's here is the episode a worker plays and its
trace. Progress of sessions and evaluations comes from the files the workers write.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...config import AppConfig
from ...engine.processes import group_config as engine_group_config
from ...engine.processes import in_worker, run_in_workers, usage_delta, worker_client
from ...engine.progress import poll_forever
from .data.model import UserEnv
from .episode import RUN_ROLES, EpisodeEvents
from .layout import RunDir
from .ray_executor import EpisodeJob, FileProgress, default_client, user_finished
from .results import write_trace

if TYPE_CHECKING:
    from .runner import Runner

#: Users per worker below which another worker is not worth its start (about a second of imports).
USERS_PER_WORKER = 8

__all__ = ["USERS_PER_WORKER", "ProcessExecutor", "auto_workers", "group_config", "run_group", "usage_delta"]


def auto_workers(cfg: AppConfig, n_users: int, roles: tuple[str, ...]) -> int:
    """How many processes ``run.workers = 0`` (auto) means for ``n_users`` users.

    One per core, at most one per ``USERS_PER_WORKER`` users, and 1 whenever a role runs on the embedded
    model (its llama.cpp server belongs to one process) or the run is serial.
    """
    if cfg.run.serial or any(cfg.llm.chat_base_url(r) is None for r in roles):  # type: ignore[arg-type]
        return 1
    return max(1, min(os.cpu_count() or 1, n_users // USERS_PER_WORKER))


def group_config(cfg: AppConfig, workers: int) -> AppConfig:
    """A group's config: every endpoint's ``max_concurrency`` divided between the groups (at least 1)."""
    return engine_group_config(cfg, workers, RUN_ROLES)


def run_group(jobs: list[EpisodeJob], group: int = 0) -> dict[str, Any]:
    """Run a group's episodes concurrently on one event loop in this process (the worker's entry point)."""

    async def go() -> dict[str, Any]:
        cfg = jobs[0].cfg
        llm = worker_client(jobs[0].make_client, cfg, jobs[0].journal)
        gate = asyncio.Semaphore(cfg.run.user_concurrency)
        failures: list[dict[str, Any]] = []
        traced: list[str] = []

        async def one(job: EpisodeJob) -> None:
            from .episode import Episode

            events = EpisodeEvents()
            async with gate:
                await Episode(job.user, job.spec, llm, job.cfg, RunDir(job.rundir),
                              off_policy=RunDir(job.off_policy) if job.off_policy else None,
                              events=events, after_period=job.after_period).run()
            failures.extend(events.failures)
            # Assembled here as soon as the user is done, as the local executor does, not by the driver at the
            # end (serially, for every user, while every slot is idle).
            await write_trace(job.user, RunDir(job.rundir))
            traced.append(job.user.id)

        async def episodes() -> None:
            await asyncio.gather(*(one(j) for j in jobs))

        await in_worker(group, llm, episodes())
        return {"usage": llm.ledger.to_dict(), "failures": failures, "traced": traced}

    return asyncio.run(go())


@dataclass
class ProcessExecutor:
    """Runs the users' episodes in ``workers`` local processes; pass it to :meth:`Runner.run` as ``executor``."""

    workers: int
    #: The users whose ``trace.jsonl`` a worker wrote in this invocation (the runner writes the others).
    traced: set[str] = field(default_factory=set)

    async def run_users(self, runner: Runner, users: list[UserEnv], events: EpisodeEvents) -> None:
        """Split the unfinished users into groups, run each group in a worker, merge usage and failures."""
        todo = [u for u in users if not user_finished(runner.rundir, u)]
        if not todo:
            return
        workers = max(1, min(self.workers, len(todo)))
        cfg = group_config(runner.cfg, workers)
        root = runner.rundir.root.resolve()
        off = runner.off_policy.root.resolve() if runner.off_policy else None
        journal = runner.llm.usage_journal
        shared = (journal.path, journal.invocation) if journal is not None else None
        groups = [[EpisodeJob(user=u, spec=runner.spec, cfg=cfg, rundir=root, off_policy=off,
                              after_period=runner.after_period, make_client=default_client, journal=shared)
                   for u in todo[i::workers]] for i in range(workers)]
        watcher = FileProgress(runner.rundir, todo, events)
        poller = asyncio.create_task(poll_forever(watcher.poll, 0.5))
        try:
            results = await run_in_workers(run_group, groups, runner.llm.ledger)
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
        watcher.poll()
        for group, result in zip(groups, results, strict=True):
            if isinstance(result, BrokenProcessPool):
                # A worker that died is its users' failure; a re-run resumes them from their checkpoints.
                events.failures.extend({"user": job.user.id, "period": None, "stage": "worker",
                                        "error": f"worker process died: {result}"} for job in group)
            elif isinstance(result, BaseException):
                raise result  # not the model's or the agent's fault (a broken run file, a full disk), as locally
            else:
                events.failures.extend(result["failures"])
                self.traced.update(result["traced"])
