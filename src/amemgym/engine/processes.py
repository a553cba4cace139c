"""Worker processes on one machine for any unit family: the units split into groups, each group on its own loop.

One event loop plays every unit, and at a few hundred calls a second its CPU (the HTTP client, request and
reply JSON, records) fills one core before a busy server's slots are full (docs/design.md §10). With
``run.workers`` above 1, :func:`amemgym.engine.runner.run_units` plays a unit family's units on that many
processes instead: unit ``i`` goes to group ``i % workers``, and each group plays its units concurrently with
:func:`amemgym.engine.play.play_failures` (the local executor's code) on its own client, built from the
run's config with every endpoint's ``max_concurrency`` divided between the groups. A unit's files do not
depend on which process played it, so the run directory is the same as from one process.

Each worker sends its usage so far every second, on the pipe that carries its work and its result (a
``multiprocessing.Queue`` would hold named semaphores, which a killed driver leaves behind with a warning), so the
driver's ledger (the progress line, ``usage.pending.json``) stays current; the driver adds what changed since the
last report it saw, and the workers' failures at the end. A unit counts as done on the progress line when the
family's ``finished`` hook finds it on disk. A worker dies with the driver (a kill of the driver ends the whole
run, as with one process); a worker that ended before it sent its result (killed, or an agent's ``os._exit``) is a
failure of each unit of its group, which a re-run resumes from its checkpoint. The driver starts each worker itself
and ends it once it has answered, so a thread an agent left running keeps neither the worker nor the run alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agents.registry import load_plugin_files, loaded_plugin_files
from ..children import end, ended_how, scrub_output
from ..children import stdout_to_stderr as print_to_stderr
from ..llm.redact import redact
from ..llm.usage import COUNTERS, CallJournal, RoleUsage, UsageLedger
from ..redact import registered
from .contract import hook
from .play import play_failures
from .ray import SIDE_ROLES, UnitJob, default_client
from .rundir import UnitRunDir
from .usage import LiveUsage

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from multiprocessing.connection import Connection
    from pathlib import Path

    from ..config import AppConfig
    from ..llm.client import LLMClient
    from .contract import AgentPlan, Unit
    from .executor import PlayContext

__all__ = ["USAGE_REPORT_SECONDS", "ProcessUnitExecutor", "WorkerEnded", "group_config",
           "in_worker", "run_in_workers", "run_unit_group", "usage_delta", "within_ceiling", "worker_client"]

#: Seconds between a worker's usage reports.
USAGE_REPORT_SECONDS = 1.0

#: In a worker process: the pipe it sends ``("usage", (group, sequence, usage))`` reports on, and the driver's
#: pid (both set by :func:`_set_reports`).
_reports: Connection | None = None
_driver: int | None = None


@contextlib.contextmanager
def _workers_start_deaf() -> Iterator[None]:
    """Start worker processes with Ctrl-C ignored; :func:`_hearing` hears it again once their work is loaded.

    Ctrl-C reaches every process of the terminal's group. A worker still importing amemgym (at start-up, or
    while unpickling its work) would print the import's traceback; ignored, it goes on, and the driver's
    death ends it (:func:`_set_reports`). An ignored signal stays ignored through the spawn's exec, and the
    driver hears Ctrl-C again as soon as the processes are started.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; a caller with its own loop thread keeps the default
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _set_reports(pipe: Connection, driver: int, plugin_files: Sequence[str] = ()) -> None:
    """A worker's set-up: keep the pipe to report on, end with the driver, and import the driver's plug-in files
    (its work names a file plug-in's factory by the module name the driver imported the file under)."""
    global _reports, _driver
    _reports, _driver = pipe, driver
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != _driver:
        # The driver died while this worker was starting, so no one reads its work. concurrent.futures logs
        # an initializer's exception with its traceback, on a terminal the killed run has already left.
        logging.getLogger("concurrent.futures").disabled = True
        raise SystemExit("the driver process is gone")
    load_plugin_files(list(plugin_files))  # the driver imported each already, so none fails here


def usage_delta(new: UsageLedger, old: UsageLedger) -> UsageLedger:
    """What ``new`` counted beyond ``old`` (both reports of one worker, ``new`` the later)."""
    out = UsageLedger()
    for name, now in new.roles.items():
        before = old.roles.get(name, RoleUsage())
        role = out.role(name)
        for field in COUNTERS:
            setattr(role, field, getattr(now, field) - getattr(before, field))
        role.faults = Counter(now.faults)
        role.faults.subtract(before.faults)
        role.answered = now.answered
    return out


def within_ceiling(cfg: AppConfig, workers: int, roles: Sequence[str]) -> int:
    """``workers``, or fewer: each worker process holds at least one call in flight on every endpoint, so never
    more of them than the lowest ``max_concurrency`` of ``roles`` and the side roles (``--max-connections 1``
    means one call at a time, whatever ``run.workers`` says)."""
    ceiling = min(cfg.llm.endpoint(role).max_concurrency  # type: ignore[arg-type]
                  for role in dict.fromkeys((*roles, *SIDE_ROLES)))
    return max(1, min(workers, ceiling))


def group_config(cfg: AppConfig, workers: int, roles: Sequence[str]) -> AppConfig:
    """A group's config: the endpoint of every role in ``roles`` (and the side roles) gets its ``max_concurrency``
    divided between the groups (at least 1), and the unit concurrency too."""
    overrides = {role: dict(over) for role, over in cfg.llm.roles.items()}
    for role in dict.fromkeys((*roles, *SIDE_ROLES)):
        ep = cfg.llm.endpoint(role)  # type: ignore[arg-type]
        overrides.setdefault(role, {})["max_concurrency"] = max(1, ep.max_concurrency // workers)  # type: ignore[arg-type, index]
    out = cfg.model_copy(deep=True)
    out.llm.roles = overrides  # type: ignore[assignment]
    out.run.user_concurrency = max(1, cfg.run.user_concurrency // workers)
    return out


async def in_worker(group: int, llm: LLMClient, work: Awaitable[None], live: LiveUsage) -> None:
    """In a worker process: await ``work`` while sending ``llm``'s usage to the driver every second (``live``:
    its ledger with the units playing), stop it when the driver is gone, and close the client (journal,
    connections, cache) at the end."""
    task = asyncio.ensure_future(work)

    async def report() -> None:
        sequence = 0
        while _reports is not None:
            await asyncio.sleep(USAGE_REPORT_SECONDS)
            if os.getppid() != _driver:
                task.cancel()  # the driver died: stop here, as if killed with it
                return
            sequence += 1
            try:
                _reports.send(("usage", (group, sequence, live.now().to_dict())))
            except OSError:  # the driver's end is closed: it is gone
                task.cancel()
                return

    reporter = asyncio.create_task(report())
    try:
        await task
    finally:
        reporter.cancel()
        if llm.usage_journal is not None:
            llm.usage_journal.close()
        await llm.aclose()
        if llm.cache is not None:
            llm.cache.close()


class WorkerEnded(RuntimeError):
    """A worker process ended before it sent its group's result (killed, or its code called ``os._exit``)."""

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode
        super().__init__(ended_how(exitcode))


def _worker_main(entry: Callable[[list[Any], int], dict[str, Any]], index: int, pipe: Connection,
                 driver: int, plugin_files: Sequence[str], stdout_to_stderr: bool, keys: Sequence[str]) -> None:
    """A worker process: set up as :func:`_set_reports` does, read its group from ``pipe`` (only once the plug-in
    files are imported: it names a file plug-in's factory by their module names), play it, and answer
    ``("done", result)`` or ``("raised", exception)``.

    ``stdout_to_stderr``: the driver sends its stdout to stderr (``--json``, whose stdout is the summary alone), so
    what an agent prints here goes there too (file descriptors, so native code's output as well). ``keys``: the
    driver's, scrubbed out of what is printed here (:func:`~amemgym.children.scrub_output`).
    """
    if stdout_to_stderr:
        print_to_stderr()
    scrub_output(keys)
    try:
        _set_reports(pipe, driver, plugin_files)
    except SystemExit:
        return  # the driver is gone: nobody to answer
    signal.signal(signal.SIGINT, signal.default_int_handler)  # hears Ctrl-C again (see _workers_start_deaf)
    outcome: tuple[str, Any]
    try:
        outcome = ("done", entry(pipe.recv(), index))
    except BaseException as exc:  # noqa: BLE001 - the driver decides what it means (it raises it again)
        outcome = ("raised", exc)
    try:
        pipe.send(outcome)
    except Exception:  # noqa: BLE001 - an exception that does not pickle: its type and text still go
        pipe.send(("raised", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}")))
    pipe.close()


def _outcome(pipe: Connection, process: Any, group: list[Any],
             report: Callable[[int, int, dict[str, Any]], None]) -> dict[str, Any] | BaseException:
    """(In a thread of the driver) send the worker its group, hand each usage report it sends to ``report``, and
    return what it answered, or :class:`WorkerEnded`; then the worker is ended."""
    sent: tuple[str, Any] | None = None
    try:
        pipe.send(group)
        while True:
            sent = pipe.recv()
            if sent[0] != "usage":
                break
            report(*sent[1])
    except (EOFError, OSError):
        sent = None
    finally:
        pipe.close()
    end(process)  # done with its work: a thread its agent left must not keep it (or us) alive
    return WorkerEnded(process.exitcode) if sent is None else sent[1]  # type: ignore[no-any-return]


async def run_in_workers(entry: Callable[[list[Any], int], dict[str, Any]], groups: list[list[Any]],
                         ledger: UsageLedger) -> list[dict[str, Any] | BaseException]:
    """On the driver: run ``entry(group, i)`` for every group in its own spawned process (each ending with the
    driver), adding each worker's usage to ``ledger`` as its reports arrive and its final count at the end.

    Returns each group's result (a dict holding its ``usage``) or the exception its process ended with (a
    :class:`WorkerEnded` when the process ended without a result). A worker still alive once it sent its result
    is ended, as is every worker when this coroutine is cancelled.
    """
    # What a report adds beyond the last one taken from that worker (reports may arrive late or after the
    # final count; older ones are skipped).
    seen: dict[int, tuple[int, UsageLedger]] = {i: (0, UsageLedger()) for i in range(len(groups))}

    def take(group: int, sequence: int, usage: dict[str, Any]) -> None:
        last_sequence, last = seen[group]
        if sequence <= last_sequence:
            return
        now = UsageLedger.from_dict(usage)
        ledger.merge(usage_delta(now, last))
        seen[group] = (sequence, now)

    mp = multiprocessing.get_context("spawn")  # a fork would inherit this loop, its threads and sockets
    loop = asyncio.get_running_loop()

    def report(group: int, sequence: int, usage: dict[str, Any]) -> None:  # on a thread reading a worker's pipe
        loop.call_soon_threadsafe(take, group, sequence, usage)

    workers: list[Any] = []
    try:
        waits = []
        with _workers_start_deaf():  # each start spawns its worker
            for i, group in enumerate(groups):
                ours, theirs = mp.Pipe()
                process = mp.Process(target=_worker_main, name=f"amemgym-worker-{i}",
                                     args=(entry, i, theirs, os.getpid(), loaded_plugin_files(),
                                           sys.stdout is sys.stderr, registered()))
                process.start()
                theirs.close()  # the worker holds the only other end: its end, however it comes, is an EOF here
                workers.append(process)
                waits.append(asyncio.to_thread(_outcome, ours, process, group, report))
        results: list[dict[str, Any] | BaseException] = list(await asyncio.gather(*waits))
    finally:
        for process in workers:
            # Cancelled (Ctrl-C, which the workers hear too) or failed here: each has a moment to stop at a
            # checkpoint, then no worker outlives the run.
            end(process)
    for i, result in enumerate(results):
        if isinstance(result, dict):
            take(i, 1 << 62, result["usage"])  # the final count, after every report
    return results


def worker_client(make_client: Callable[[AppConfig], LLMClient], cfg: AppConfig,
                  journal: tuple[Path, str] | None) -> LLMClient:
    """A worker's client: built from its group's config, with the run's seed and the driver's call journal."""
    llm = make_client(cfg)
    llm.sample_seed = cfg.run.seed
    if journal is not None:
        llm.usage_journal = CallJournal(*journal)  # each finished call counted, as in the driver
    return llm


def run_unit_group(jobs: list[UnitJob], group: int = 0) -> dict[str, Any]:
    """Play a group's units concurrently on one event loop in this process (the worker's entry point)."""
    async def go() -> dict[str, Any]:
        cfg = jobs[0].cfg
        llm = worker_client(jobs[0].make_client, cfg, jobs[0].journal)
        gate = asyncio.Semaphore(1 if cfg.run.serial else cfg.run.user_concurrency)
        failures: list[dict[str, Any]] = []
        live = LiveUsage(llm.ledger)  # the reports count the calls of units still playing too

        async def one(job: UnitJob) -> None:
            async with gate:
                failures.extend(await play_failures(job.family, job.unit, job.plan, job.pins, llm, job.cfg,
                                                    UnitRunDir(job.root), job.run_fields, live))

        async def played() -> None:
            await jobs[0].models.hold(llm, "in this worker")
            await asyncio.gather(*(one(j) for j in jobs))

        await in_worker(group, llm, played(), live)
        return {"usage": llm.ledger.to_dict(), "failures": failures}

    return asyncio.run(go())


@dataclass(frozen=True)
class ProcessUnitExecutor:
    """Plays the units in ``workers`` local processes (an :class:`~amemgym.engine.executor.UnitExecutor`)."""

    workers: int
    #: One unit at a time in each worker (``--serial``: a plug-in still plays in a worker then).
    serial: bool = False

    async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
        """Split the units into groups, play each group in a worker, merge usage and failures."""
        if not units:
            return []
        workers = max(1, min(self.workers, len(units)))
        cfg = group_config(ctx.cfg, workers, ctx.plan.roles)
        if self.serial:
            cfg.run.serial = True
        root = ctx.rd.root.resolve()
        journal = ctx.llm.usage_journal
        shared = (journal.path, journal.invocation) if journal is not None else None
        groups = [[UnitJob(family=ctx.family, unit=u, plan=ctx.plan, pins=ctx.pins, cfg=cfg, root=root,
                           models=ctx.models, run_fields=ctx.run_fields,
                           make_client=ctx.make_client or default_client, journal=shared)
                   for u in units[i::workers]] for i in range(workers)]
        finished = hook(ctx.family, "finished")
        reported: set[str] = set()

        def newly_finished() -> list[str]:
            return [u.id for u in units if u.id not in reported and finished(u, ctx.rd.root) is not None]

        async def watch() -> None:
            while True:
                await asyncio.sleep(USAGE_REPORT_SECONDS / 2)
                for unit_id in await asyncio.to_thread(newly_finished):
                    reported.add(unit_id)
                    ctx.on_done()

        watcher = asyncio.create_task(watch())
        try:
            results = await run_in_workers(run_unit_group, groups, ctx.llm.ledger)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        failures: list[dict[str, Any]] = []
        for group, result in zip(groups, results, strict=True):
            if isinstance(result, WorkerEnded):
                line = _ended_line(ctx.plan, result, len(group), ctx.family.noun)
                print(f"error: {line}", file=sys.stderr, flush=True)
                failures.extend({"user": job.unit.id, "stage": "worker", "label": job.unit.label,
                                 "error": redact(line)} for job in group)
            elif isinstance(result, BaseException):
                raise result  # not the model's or the agent's fault (a broken run file, a full disk), as locally
            else:
                failures.extend(result["failures"])
        for u in units:
            if u.id not in reported:
                ctx.on_done()
        return failures


def _ended_line(plan: AgentPlan, ended: WorkerEnded, count: int, noun: str) -> str:
    """One line for a worker process that ended with ``count`` units unfinished: a plug-in agent is named as its
    likely cause (its code runs there, and ``os._exit`` is how code ends a process with no traceback)."""
    who = f"agent {plan.agent!r} ended its process" if plan.plugin else "the worker process ended"
    return (f"{who} ({ended}) with {count} {noun} unfinished; a plug-in must not end its process. What finished "
            "is kept: re-run the same command to resume")
