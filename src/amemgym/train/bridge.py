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
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import RunError

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
