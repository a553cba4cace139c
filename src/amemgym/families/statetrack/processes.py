"""Worker processes on one machine: the users split into groups, each group's episodes on its own event loop.

One event loop runs every user's episode, and at a few hundred calls a second its CPU (the HTTP client,
request and reply JSON, records) fills one core before a busy server's slots are full (docs/design.md §10).
``run.workers`` spreads the users over that many processes: user ``i`` goes to group ``i % workers``,
each group runs the same :class:`~amemgym.families.statetrack.episode.Episode` code with its own
:class:`~amemgym.llm.client.LLMClient` (the same config and persistent cache, the endpoint's
``max_concurrency`` divided between the groups) and writes ``users/<id>/...`` as the local executor does.
Every call's content depends only on the user, its seeds and the replies, never on which process or
in what order it ran, so the run directory is the same as from one process. Each worker sends its usage so
far every second, so the driver's ledger (the progress line, ``usage.pending.json``) stays current; the
driver adds what changed since the last report it saw, and the workers' failures at the end. Progress of
sessions and evaluations comes from the files the workers write.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...config import AppConfig
from ...engine.processes import usage_delta
from ...engine.progress import poll_forever
from ...llm.usage import CallJournal, UsageLedger
from .data.model import UserEnv
from .episode import EpisodeEvents
from .layout import RunDir
from .ray_executor import EpisodeJob, FileProgress, default_client, user_finished
from .results import write_trace

if TYPE_CHECKING:
    from .runner import Runner

#: Users per worker below which another worker is not worth its start (about a second of imports).
USERS_PER_WORKER = 8
#: Seconds between a worker's usage reports.
USAGE_REPORT_SECONDS = 1.0

#: In a worker process: where it sends ``(group, sequence, usage)`` reports, and the driver's pid (both set
#: by the pool's initializer).
_reports: Any = None
_driver: int | None = None


def _set_reports(q: Any, driver: int) -> None:
    """Pool initializer: keep the report queue, and end with the driver (see :func:`_follow_driver`)."""
    global _reports, _driver
    _reports, _driver = q, driver
    _follow_driver()


def _follow_driver() -> None:
    """Make this worker die with the driver process, as a kill of a one-process run would end everything.

    A driver killed (SIGKILL, a crash) would otherwise leave its workers writing into the run directory
    while a resumed run, holding the lock the dead driver released, writes the same users. On Linux the
    kernel ends the worker the moment its parent dies; a worker that starts after that refuses to run,
    and elsewhere the usage reporter checks every second.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != _driver:
        raise SystemExit("the driver process is gone")  # it died while this worker was starting


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
    overrides = {role: dict(over) for role, over in cfg.llm.roles.items()}
    for role in ("agent", "memory", "simulator", "embedder", "judge", "generator"):
        ep = cfg.llm.endpoint(role)  # type: ignore[arg-type]
        overrides.setdefault(role, {})["max_concurrency"] = max(1, ep.max_concurrency // workers)  # type: ignore[index]
    out = cfg.model_copy(deep=True)
    out.llm.roles = overrides  # type: ignore[assignment]
    out.run.user_concurrency = max(1, cfg.run.user_concurrency // workers)
    return out


def run_group(jobs: list[EpisodeJob], group: int = 0) -> dict[str, Any]:
    """Run a group's episodes concurrently on one event loop in this process (the worker's entry point)."""

    async def go() -> dict[str, Any]:
        cfg = jobs[0].cfg
        llm = jobs[0].make_client(cfg)
        llm.sample_seed = cfg.run.seed
        if jobs[0].journal is not None:
            llm.usage_journal = CallJournal(*jobs[0].journal)  # each finished call counted, as in the driver
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

        episodes = asyncio.gather(*(one(j) for j in jobs))

        async def report() -> None:
            sequence = 0
            while _reports is not None:
                await asyncio.sleep(USAGE_REPORT_SECONDS)
                if os.getppid() != _driver:
                    episodes.cancel()  # the driver died: stop here, as if killed with it
                    return
                sequence += 1
                _reports.put((group, sequence, llm.ledger.to_dict()))

        reporter = asyncio.create_task(report())
        try:
            await episodes
        finally:
            reporter.cancel()
            if llm.usage_journal is not None:
                llm.usage_journal.close()
            await llm.aclose()
            if llm.cache is not None:
                llm.cache.close()
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
        # The driver's ledger gets each worker's usage as it grows: what a report adds beyond the last one
        # taken from that worker (reports may arrive late or after the final count; older ones are skipped).
        seen: dict[int, tuple[int, UsageLedger]] = {i: (0, UsageLedger()) for i in range(workers)}

        def take(group: int, sequence: int, usage: dict[str, Any]) -> None:
            last_sequence, last = seen[group]
            if sequence <= last_sequence:
                return
            now = UsageLedger.from_dict(usage)
            runner.llm.ledger.merge(usage_delta(now, last))
            seen[group] = (sequence, now)

        ctx = multiprocessing.get_context("spawn")  # a fork would inherit this loop, its threads and sockets
        reports = ctx.Queue()

        async def drain() -> None:
            while True:
                await asyncio.sleep(USAGE_REPORT_SECONDS / 2)
                with contextlib.suppress(queue.Empty):
                    while True:
                        take(*reports.get_nowait())

        drainer = asyncio.create_task(drain())
        loop = asyncio.get_running_loop()
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_set_reports,
                                 initargs=(reports, os.getpid())) as pool:
            try:
                results = await asyncio.gather(*(loop.run_in_executor(pool, run_group, g, i)
                                                 for i, g in enumerate(groups)), return_exceptions=True)
            finally:
                for task in (poller, drainer):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        watcher.poll()
        for i, (group, result) in enumerate(zip(groups, results, strict=True)):
            if isinstance(result, BrokenProcessPool):
                # A worker that died is its users' failure; a re-run resumes them from their checkpoints.
                events.failures.extend({"user": job.user.id, "period": None, "stage": "worker",
                                        "error": f"worker process died: {result}"} for job in group)
            elif isinstance(result, BaseException):
                raise result  # not the model's or the agent's fault (a broken run file, a full disk), as locally
            else:
                take(i, 1 << 62, result["usage"])  # the final count, after every report
                events.failures.extend(result["failures"])
                self.traced.update(result["traced"])
        reports.close()
