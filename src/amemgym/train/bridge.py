"""The async-to-sync bridge: a private event loop on its own thread, and a hand-off of turns.

The engine is async (the simulator, the LLM client, the upper-bound calls); a Gymnasium policy is a
plain synchronous caller of ``step``. The episode therefore runs as one coroutine on a dedicated event
loop in a daemon thread. Whenever it needs the policy's action it publishes an observation through a
thread-safe queue and awaits a future; ``step(action)`` resolves that future from the caller's thread
and blocks on the queue until the next observation (or the end) is published. Background work, such
as the upper-bound calls, keeps running on the loop while the policy thinks.

A thread rather than ``loop.run_until_complete`` in the caller's thread keeps the environment usable
from code that already runs an event loop (notebooks, async trainers).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ..errors import ConfigError, RunError
from ..llm.client import LLMClient
from ..textclean import clean_text
from .spaces import MAX_TEXT

if TYPE_CHECKING:
    from ..config import AppConfig

T = TypeVar("T")


class LoopThread:
    """An event loop running forever on a daemon thread, started on first use."""

    def __init__(self, name: str = "amemgym-train-loop") -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> asyncio.AbstractEventLoop:
        """Start the loop if needed and return it."""
        if self.loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._serve, args=(loop,), name=self.name, daemon=True)
            self.loop = loop
            self._thread.start()
        return self.loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()

    @property
    def alive(self) -> bool:
        """Whether the loop thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result from the calling thread."""
        loop = self.start()
        if threading.current_thread() is self._thread:
            coro.close()
            raise RunError("MemoryEnv: a blocking call was made from inside the environment's own event loop")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def stop(self) -> None:
        """Cancel what is left on the loop, stop it and join the thread."""
        if self.loop is None:
            return
        loop, thread = self.loop, self._thread
        self.run(_cancel_all())
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join()
        loop.close()
        self.loop, self._thread = None, None


async def _cancel_all() -> None:
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Published:
    """What the episode hands to the caller: an observation waiting for an action, the end, or an error.

    Attributes:
        kind: ``observation``, ``done`` or ``error``.
        text: the observation text (empty at the end).
        info: metadata of the observation (never the answer to a question it asks).
        outcomes: scored results of actions taken since the previous publication.
        error: the exception that ended the episode (kind ``error``).
    """

    kind: str
    text: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None


class TurnChannel:
    """One episode's hand-off between the loop (producer of observations) and ``step`` (producer of actions)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.published: queue.Queue[Published] = queue.Queue()
        self._pending: asyncio.Future[str] | None = None
        self._outcomes: list[dict[str, Any]] = []

    def record(self, outcome: dict[str, Any]) -> None:
        """Attach a scored result to the next publication (loop side)."""
        self._outcomes.append(outcome)

    def _take_outcomes(self) -> list[dict[str, Any]]:
        out, self._outcomes = self._outcomes, []
        return out

    async def ask(self, text: str, info: dict[str, Any]) -> str:
        """Publish an observation and wait for the policy's action (loop side)."""
        fut: asyncio.Future[str] = self.loop.create_future()
        self._pending = fut
        self.published.put(Published("observation", text, info, self._take_outcomes()))
        return await fut

    def finish(self, info: dict[str, Any]) -> None:
        """Publish the end of the episode (loop side)."""
        self.published.put(Published("done", "", info, self._take_outcomes()))

    def fail(self, exc: BaseException) -> None:
        """Publish the error that ended the episode (loop side)."""
        self.published.put(Published("error", "", {}, self._take_outcomes(), exc))

    def act(self, action: str) -> None:
        """Deliver the policy's action to the waiting episode (caller side)."""
        fut = self._pending
        if fut is None:
            raise RunError("MemoryEnv: no observation is waiting for an action; call reset()")
        self._pending = None
        self.loop.call_soon_threadsafe(_resolve, fut, action)

    def wait(self, thread: LoopThread, poll_s: float = 0.5) -> Published:
        """Block until the episode publishes something (caller side)."""
        while True:
            try:
                return self.published.get(timeout=poll_s)
            except queue.Empty:
                if not thread.alive:
                    raise RunError("MemoryEnv: the environment's event loop stopped unexpectedly") from None


def _resolve(fut: asyncio.Future[str], action: str) -> None:
    if not fut.done():
        fut.set_result(action)


def check_seed(seed: Any, name: str) -> None:
    """Refuse a ``reset`` seed that is not None or a non-negative int, in one line (Gymnasium's own check raises its
    own error type)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"{name}.reset: seed must be None or an int >= 0, got {seed!r}")


class BridgedEnv:
    """What every text environment driven through the bridge shares: the loop thread, the running episode
    task, the hand-off of an action, and the lifecycle (``close``, context manager, the owned client).

    A subclass sets ``_loop``, ``_llm``, ``_owns_llm`` and ``config`` in its ``__init__`` (then calls
    :meth:`_init_bridge`), starts an episode with :meth:`_begin`, and calls :meth:`_exchange` in ``step``.
    """

    _loop: LoopThread
    _llm: LLMClient | None
    _owns_llm: bool
    config: AppConfig

    def _init_bridge(self) -> None:
        if self._llm is not None:
            # A client's locks and connections belong to the event loop of the first environment that used it;
            # a second environment's loop would fail on them mid-episode.
            owner = getattr(self._llm, "_bridged_env", None)
            if owner is not None and owner() is not None:
                raise ConfigError(f"{type(self).__name__}: this LLMClient already serves another environment; give "
                                  "each environment a client of its own")
            self._llm._bridged_env = weakref.ref(self)  # type: ignore[attr-defined]
        self._task: asyncio.Task[None] | None = None
        self._channel: TurnChannel | None = None
        self._steps = 0
        self._max_steps: int | None = None
        self._done = True
        self._shown: tuple[str, dict[str, Any], float | None] | None = None  # what render() draws

    def _begin(self, episode: Callable[[TurnChannel], Coroutine[Any, Any, None]]) -> Published:
        """Start ``episode(channel)`` on the loop and return its first publication (stop the last one first)."""
        self._steps = 0
        channel = TurnChannel(self._loop.start())
        self._channel = channel
        self._task = self._loop.run(_spawn(episode(channel)))
        self._done = False
        pub = channel.wait(self._loop)
        if pub.kind != "observation":
            self._done = True
            self._raise_if_error(pub)
        return pub

    def _exchange(self, action: str) -> tuple[Published, bool, bool]:
        """Hand ``action`` to the episode; returns the next publication, ``terminated`` and ``truncated``."""
        name = type(self).__name__
        if self._done or self._channel is None:
            raise RunError(f"{name}: the episode is over (or never started); call reset()")
        if not isinstance(action, str):
            raise ConfigError(f"{name}: an action must be a str, got {type(action).__name__}")
        if len(action) > MAX_TEXT:
            raise ConfigError(f"{name}: an action holds {len(action):,} characters; the action space allows at most "
                              f"{MAX_TEXT:,}")
        action = clean_text(action)  # a lone surrogate could not be written to the episode's trace
        self._steps += 1
        self._channel.act(action)
        pub = self._channel.wait(self._loop)
        self._raise_if_error(pub)
        terminated = pub.kind == "done"
        truncated = not terminated and self._max_steps is not None and self._steps >= self._max_steps
        if terminated or truncated:
            self._done = True
            self._stop_episode()
        return pub, terminated, truncated

    def close(self) -> None:
        """Stop the episode, close the client if the environment created it, and stop the loop thread."""
        self._stop_episode()
        if self._loop.loop is not None:
            if self._owns_llm and self._llm is not None:
                self._loop.run(self._llm.aclose())
                self._llm = None
            self._loop.stop()
        self._done = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the environment's event loop, e.g. a policy's call to the same :class:`LLMClient`.

        The client's concurrency limits belong to this loop, so sharing it from another loop would fail.
        """
        return self._loop.run(coro)

    @property
    def llm(self) -> LLMClient:
        """The client the environment uses (created on first access when none was given)."""
        return self._client()

    def _client(self) -> LLMClient:
        if self._llm is None:
            self._llm = LLMClient.from_config(self.config.llm)
        return self._llm

    def _stop_episode(self) -> None:
        task, self._task, self._channel = self._task, None, None
        if task is not None and self._loop.loop is not None:
            self._loop.run(_cancel(task))
        self._episode_stopped()

    def _episode_stopped(self) -> None:
        """Hook: release what one episode held (after its task is cancelled)."""

    def _raise_if_error(self, pub: Published) -> None:
        if pub.kind == "error":
            self._done = True
            self._stop_episode()
            assert pub.error is not None
            raise pub.error


async def _spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.create_task(coro)


async def _cancel(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
