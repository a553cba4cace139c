"""Calling plug-in code: a stall is reported, a time limit ends it, and any misbehaviour becomes one line.

Plug-in agents (``module:factory``) are code we do not control. Each call into one (``reply``, ``act``,
``answer``, ...) goes through :func:`call_plugin`, so that (docs/design.md §6, "Plug-ins"):

- a call that gives no reply for :data:`STALL_SECONDS` is reported on stderr, like a stalled model call;
- a call still running after the per-call limit (``run.agent_call_timeout``) fails as an :class:`AgentError`
  naming the agent and the call, which the run records in ``failures.json`` and retries on resume;
- an exception, ``sys.exit`` or a reply of the wrong type is such a failure too, never a traceback or a
  silent exit 0;
- a lone surrogate in a string it returns (which no file can hold as UTF-8) becomes U+FFFD.

A call can stall in three ways, each handled differently:

- a synchronous method (``def reply``) runs in its own daemon thread, which the run stops waiting for at
  the limit (a thread cannot be killed; a daemon thread does not keep the process alive);
- an ``async`` method that waits forever (on an event that never comes) is cancelled at the limit;
- an ``async`` method that blocks the event loop itself (a synchronous network call inside ``async def``)
  is watched step by step: a watchdog thread sees the loop stuck inside the plug-in's code and, at the
  limit, raises inside it through a signal (main thread only). While such a step runs, Ctrl-C raises at
  once instead of waiting for the loop, so an interrupted run stops and resumes as any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..config import RunSettings
from ..errors import AgentError, AMemGymError
from ..textclean import clean_value

#: A plug-in call without a reply for this long is reported (as a model call waiting that long is).
STALL_SECONDS = 30.0
#: How often the watchdog looks at the calls in flight.
_POLL_SECONDS = 0.1

#: The per-call limit of the current run (``run.agent_call_timeout``), set by the command that runs agents.
_LIMIT: ContextVar[float | None] = ContextVar("agent_call_limit", default=None)
#: The limit on a plug-in's import and factory (``run.agent_factory_timeout``), set as the call limit is.
_FACTORY_LIMIT: ContextVar[float | None] = ContextVar("agent_factory_limit", default=None)
#: The stall threshold, lowered by tests (a context variable, so nothing global is mutated).
_STALL: ContextVar[float] = ContextVar("agent_call_stall", default=STALL_SECONDS)


def set_call_limit(seconds: float | None, *, stall: float | None = None, factory: float | None = None) -> None:
    """Set the per-call limit (and optionally the stall threshold and the factory's limit) for this context."""
    _LIMIT.set(seconds)
    if stall is not None:
        _STALL.set(stall)
    if factory is not None:
        _FACTORY_LIMIT.set(factory)


def call_limit() -> float:
    """The per-call limit in force: the run's setting, else the config's default."""
    limit = _LIMIT.get()
    if limit is None:
        limit = float(RunSettings.model_fields["agent_call_timeout"].default)
    return limit


def factory_limit() -> float:
    """The limit in force on a plug-in's import and factory: the run's setting, else the config's default."""
    limit = _FACTORY_LIMIT.get()
    if limit is None:
        limit = float(RunSettings.model_fields["agent_factory_timeout"].default)
    return limit


class _Overdue(BaseException):
    """Raised inside a plug-in step that blocked the event loop past its limit (BaseException: the plug-in's
    own ``except Exception`` must not swallow it)."""


class _Exited(Exception):
    """A plug-in's ``sys.exit``, carried as an ordinary exception through the event loop."""

    def __init__(self, code: Any) -> None:
        super().__init__(code)
        self.code = code


@dataclass(eq=False)
class _Call:
    """One plug-in call in flight, as the watchdog sees it."""

    agent: str
    method: str
    limit: float
    stall: float
    #: The setting that holds ``limit``, named in messages.
    setting: str = "run.agent_call_timeout"
    started: float = field(default_factory=time.monotonic)
    #: When the plug-in's code started running on the loop thread without yielding (None between steps).
    step_since: float | None = None
    reported: bool = False
    overdue: bool = False

    def line(self, waited: float) -> str:
        blocking = " (blocking the event loop)" if self.step_since is not None else ""
        return (f"agent {self.agent}: no reply from {self.method} for {waited:.0f} s{blocking}; it fails after "
                f"{self.limit:g} s ({self.setting})")


class _Watchdog:
    """One daemon thread that reports stalled calls and interrupts loop-blocking steps past their limit.

    It also owns the SIGINT handler while plug-in calls run on the main thread: inside a plug-in step the
    signal raises (Ctrl-C as KeyboardInterrupt, the watchdog's own as _Overdue); elsewhere it goes to the
    handler that was there before (asyncio's, which cancels the run). A process started with SIGINT ignored
    keeps ignoring Ctrl-C, inside plug-in steps too; only the watchdog's own signal acts there.
    """

    def __init__(self) -> None:
        self._calls: set[_Call] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: The step running on the main thread now, if any (set and cleared by that thread only).
        self.step: _Call | None = None
        self._previous: Any = None
        self._installed = 0
        self._own_signal = False

    @contextlib.contextmanager
    def watching(self, call: _Call) -> Iterator[None]:
        on_main = threading.current_thread() is threading.main_thread()
        with self._lock:
            self._calls.add(call)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="amemgym-plugin-watchdog", daemon=True)
                self._thread.start()
        if on_main:
            if self._installed == 0:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed += 1
        self._wake.set()
        try:
            yield
        finally:
            with self._lock:
                self._calls.discard(call)
            if on_main:
                self._installed -= 1
                if self._installed == 0:
                    signal.signal(signal.SIGINT, self._previous)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        step, own = self.step, self._own_signal
        self._own_signal = False
        if step is not None:
            if step.overdue:
                raise _Overdue
            if self._previous == signal.SIG_IGN:
                return  # started with Ctrl-C ignored (a script's background job): it stays ignored here too
            raise KeyboardInterrupt
        if own:
            return  # the overrunning step ended just before the signal landed: nothing to interrupt
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    def _loop(self) -> None:
        main = threading.main_thread().ident
        while True:
            with self._lock:
                calls = list(self._calls)
            if not calls:
                self._wake.clear()
                self._wake.wait()
                continue
            now = time.monotonic()
            for call in calls:
                waited = now - call.started
                if not call.reported and waited >= call.stall:
                    call.reported = True
                    print(call.line(waited), file=sys.stderr, flush=True)
                since = call.step_since
                if (since is not None and not call.overdue and now - since >= call.limit and self._installed
                        and self.step is call and main is not None):
                    call.overdue = self._own_signal = True
                    signal.pthread_kill(main, signal.SIGINT)
            time.sleep(_POLL_SECONDS)


_WATCHDOG = _Watchdog()


class _Stepped:
    """Drives a plug-in coroutine one step at a time, marking each step for the watchdog.

    A step is the plug-in's code running between two awaits; while it runs the event loop can do nothing
    else, so a long one is a blocked loop.
    """

    def __init__(self, coro: Awaitable[Any], call: _Call) -> None:
        self.coro, self.call = coro, call

    def __await__(self) -> Generator[Any, Any, Any]:
        gen = self.coro.__await__()
        on_main = threading.current_thread() is threading.main_thread()
        value: Any = None
        error: BaseException | None = None
        while True:
            self.call.step_since = time.monotonic()
            if on_main:
                _WATCHDOG.step = self.call
            try:
                yielded = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                return stop.value
            except SystemExit as exc:
                # asyncio lets SystemExit out of the event loop: the run would end with exit 0 and no results.
                raise _Exited(exc.code) from None
            finally:
                if on_main:
                    _WATCHDOG.step = None
                self.call.step_since = None
            error, value = None, None
            try:
                value = yield yielded
            except BaseException as exc:  # noqa: BLE001 - handed on to the plug-in, as a Task would
                error = exc


async def _in_thread(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` in a daemon thread (a stuck one must not keep the process alive at exit)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if done.done():
            return
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def work() -> None:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: it is the plug-in's, not ours
            loop.call_soon_threadsafe(settle, False, exc)
        else:
            loop.call_soon_threadsafe(settle, True, result)

    threading.Thread(target=work, name="amemgym-plugin-call", daemon=True).start()
    return await done


def _failure(agent: str, method: str, exc: BaseException) -> AgentError:
    if isinstance(exc, SystemExit | _Exited):
        return AgentError(f"agent {agent!r}: {method} called sys.exit({exc.code!r}); a plug-in must not end the run")
    return AgentError(f"agent {agent!r}: {method} raised {type(exc).__name__}: {exc}")


def _check_type(agent: str, method: str, value: Any, expect: type | tuple[type, ...] | None) -> Any:
    """``value`` if it has the expected type, its strings cleaned of lone surrogates (see :mod:`amemgym.textclean`).

    A dict (a snapshot, stats) is stored as JSON, so it must be JSON all the way down: a set, bytes or an object
    inside would fail the write with a traceback, and an int key would come back a string.
    """
    if expect is not None and not isinstance(value, expect):
        names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
        raise AgentError(f"agent {agent!r}: {method} returned {type(value).__name__}, expected {names}")
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        # Every reply is written to the run's records, and some are sent back to the model: a runaway one
        # would fill the disk (50 MB answers made a 1.7 GB run) before anything noticed.
        raise AgentError(f"agent {agent!r}: {method} returned {len(value):,} characters; at most "
                         f"{MAX_TEXT_CHARS:,} are accepted")
    if expect is dict:
        problem = _not_json(value, method)
        if problem is not None:
            raise AgentError(f"agent {agent!r}: {method} returned {problem}; it must be JSON (dicts with string "
                             "keys, lists, strings, numbers, booleans, None)")
    return clean_value(value)


#: Longest text a plug-in may return from one call (a reply, an answer, its memory view).
MAX_TEXT_CHARS = 1_000_000

#: Deepest nesting a stored plug-in value may have (JSON readers refuse deeper ones).
_MAX_DEPTH = 200


def _not_json(value: Any, path: str, depth: int = 0) -> str | None:
    """Where ``value`` stops being JSON (``snapshot["a"][2]: a set``), or None."""
    if depth > _MAX_DEPTH:
        return f"a value nested deeper than {_MAX_DEPTH} levels at {path}"
    if value is None or isinstance(value, bool | int | float | str):
        return None
    if isinstance(value, list | tuple):
        return next((p for i, v in enumerate(value) if (p := _not_json(v, f"{path}[{i}]", depth + 1))), None)
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"a {type(k).__name__} key {k!r} at {path}"
            found = _not_json(v, f"{path}[{k!r}]", depth + 1)
            if found is not None:
                return found
        return None
    return f"a {type(value).__name__} at {path}"


async def call_plugin(agent: str, method: str, fn: Callable[..., Any], *args: Any,
                      expect: type | tuple[type, ...] | None = None, **kwargs: Any) -> Any:
    """Call plug-in method ``fn`` (sync or async) under the watchdog and the per-call limit.

    Args:
        agent: the plug-in's name, for messages.
        method: the call's name (``reply``, ``act``, ...), for messages.
        fn: the bound method.
        expect: the type(s) the reply must have; None accepts anything.

    Raises:
        AgentError: the call raised, exited, timed out or returned the wrong type. Amemgym's own errors
            raised inside it (a failed model call) pass unchanged; so does Ctrl-C.
    """
    call = _Call(agent, method, call_limit(), _STALL.get())
    deadline = asyncio.timeout(call.limit)
    with _WATCHDOG.watching(call):
        try:
            # asyncio.timeout, not wait_for: the call stays in this task, so a Ctrl-C raised inside the plug-in
            # unwinds through here (restoring the SIGINT handler) before the event loop stops.
            async with deadline:
                if inspect.iscoroutinefunction(fn):
                    result = await _Stepped(fn(*args, **kwargs), call)
                else:
                    result = await _in_thread(fn, args, kwargs)
                if inspect.isawaitable(result):  # a plain function that returned a coroutine
                    result = await _Stepped(result, call)
        except _Overdue:
            raise _overdue(call) from None
        except TimeoutError as exc:
            # The limit's own expiry, or a timeout inside the plug-in (a socket's, say): told apart.
            raise (_overdue(call) if deadline.expired() else _failure(agent, method, exc)) from None
        except AMemGymError:
            raise
        except KeyboardInterrupt:
            raise
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this task is being cancelled (the run stops): not the plug-in's doing
            raise _failure(agent, method, exc) from None  # the plug-in raised it itself
        except BaseException as exc:  # noqa: BLE001 - SystemExit and the plug-in's bugs: one line each
            raise _failure(agent, method, exc) from None
    return _check_type(agent, method, result, expect)


def _overdue(call: _Call) -> AgentError:
    return AgentError(f"agent {call.agent!r}: {call.method} gave no reply within {call.limit:g} s ({call.setting})")


def call_plugin_sync(agent: str, method: str, fn: Callable[..., Any], *args: Any,
                     expect: type | tuple[type, ...] | None = None, **kwargs: Any) -> Any:
    """A synchronous plug-in method (``restore``, ``memory_view``, ``stats``), run in place, one line on failure."""
    call = _Call(agent, method, call_limit(), _STALL.get())
    with _in_place(call):
        try:
            result = fn(*args, **kwargs)
            if inspect.iscoroutine(result):
                result.close()  # never awaited: the method did nothing, and its work must not be taken as done
                raise AgentError(f"agent {agent!r}: {method} is async; it must be a plain method (it is called "
                                 "where nothing awaits it)")
        except _Overdue:
            raise _overdue(call) from None
        except AMemGymError:
            raise
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - as in call_plugin
            raise _failure(agent, method, exc) from None
    return _check_type(agent, method, result, expect)


def call_factory(agent: str, step: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, a plug-in's import or factory (``step`` says which), held to ``run.agent_factory_timeout``.

    Only the limit is this function's: whatever ``fn`` raises passes unchanged, for the caller to word.

    Raises:
        AgentError: ``fn`` was still running at the limit.
    """
    call = _Call(agent, step, factory_limit(), _STALL.get(), setting="run.agent_factory_timeout")
    with _in_place(call):
        try:
            return fn(*args)
        except _Overdue:
            raise _overdue(call) from None


@contextlib.contextmanager
def _in_place(call: _Call) -> Iterator[None]:
    """Watch ``call`` running on this thread: it blocks the thread as a step of an async method does, so it is
    reported and interrupted the same way (interrupted on the main thread only, where signals land)."""
    on_main = threading.current_thread() is threading.main_thread()
    with _WATCHDOG.watching(call):
        call.step_since = time.monotonic()
        if on_main:
            _WATCHDOG.step = call
        try:
            yield
        finally:
            if on_main:
                _WATCHDOG.step = None
            call.step_since = None
