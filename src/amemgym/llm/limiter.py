"""Adaptive concurrency per endpoint: as many calls in flight as the server takes, found at run time.

The limit starts at the ceiling (the endpoint's ``max_concurrency``) and follows AIMD, the rule
TCP uses for its congestion window:

* every successful call adds ``1 / limit`` (so about +1 per limit's worth of calls), never above the ceiling;
* an overload signal halves it, never below 1. The signals are a 429, a 5xx or a timeout, and latency
  growth: the recent mean latency (fast moving average) above ``latency_tolerance`` times the long-run
  mean (slow moving average) and more than ``min_growth`` seconds above it (millisecond replies jitter by
  large factors without meaning anything). The long-run mean follows every call, so a lasting change in the work (longer
  prompts as conversations grow) becomes the new normal after a few dozen calls instead of a steady signal.

A burst of failures from one overload episode must cost one halving, not one per failed call: each slot
remembers the limit's epoch when it was taken, and only a call that started after the last decrease can
decrease again. Nothing here reads a clock except to time calls, so tests drive it deterministically.

Calls waiting for room are served critical path first: calls made under :func:`background_calls` (work that
can wait, such as a period's evaluation) go after every waiting call that is not. The limit is never held
below what it allows, so this only reorders the queue (docs/design.md §10).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from .backends import TransientError

#: Fault kinds of :class:`TransientError` that mean the server has too much to do (not a broken request).
OVERLOAD_KINDS = frozenset({"http_429", "timeout"})


def is_overload(kind: str) -> bool:
    """Whether a transient fault says the endpoint is overloaded: 429, any 5xx, or a timeout."""
    return kind in OVERLOAD_KINDS or (kind.startswith("http_5") and len(kind) == 8)


_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("amemgym_background_calls", default=False)


@contextmanager
def background_calls() -> Iterator[None]:
    """Mark the model calls made inside (and in tasks started inside) as able to wait for the others.

    A call waiting for room under a limit goes after every waiting call not so marked. A conversation is a
    chain of calls, each waiting for the one before, while an evaluation's calls run side by side and are
    needed later: serving the chains first lets the longest conversations end as early as the limit
    allows, instead of queueing each turn behind a burst of evaluation calls.
    """
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def is_background_call() -> bool:
    """Whether a call made here now would wait behind calls not marked by :func:`background_calls`."""
    return _BACKGROUND.get()


@dataclass
class Slot:
    """One acquired unit of concurrency; ``epoch`` is the limiter's epoch when it was taken."""

    epoch: int
    started: float


class AdaptiveLimiter:
    """An asyncio concurrency limit that adapts between 1 and ``ceiling`` (AIMD).

    Args:
        ceiling: the most calls in flight ever allowed (the endpoint's ``max_concurrency``).
        start: the first limit; the ceiling by default (start high, back off when the server says so).
        decrease: factor applied to the limit on an overload signal.
        latency_tolerance: recent latency above this multiple of the long-run latency counts as overload.
        min_growth: seconds the recent latency must exceed the long-run one by, besides the factor.
        min_samples: calls timed before latency growth can count (the baseline needs some history).
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(
        self,
        ceiling: int,
        *,
        start: int | None = None,
        decrease: float = 0.5,
        latency_tolerance: float = 2.0,
        min_growth: float = 0.05,
        min_samples: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ceiling < 1:
            raise ValueError("ceiling must be at least 1")
        self.ceiling = ceiling
        self._limit = float(min(max(start if start is not None else ceiling, 1), ceiling))
        self.decrease = decrease
        self.latency_tolerance = latency_tolerance
        self.min_growth = min_growth
        self.min_samples = min_samples
        self.clock = clock
        self.in_flight = 0
        self.epoch = 0
        self.decreases = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._background: collections.deque[asyncio.Future[None]] = collections.deque()
        self._fast: float | None = None
        self._slow: float | None = None
        self._samples = 0

    @property
    def limit(self) -> int:
        """Calls allowed in flight now (the integer part of the AIMD window)."""
        return max(1, int(self._limit))

    # ---- acquiring ----------------------------------------------------------------------------------
    async def acquire(self) -> Slot:
        """Wait for room under the current limit and take a slot."""
        while self.in_flight >= self.limit:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            (self._background if is_background_call() else self._waiters).append(fut)
            try:
                await fut
            except BaseException:
                # A cancelled waiter that had been woken passes its turn on, or a slot could sit idle.
                if fut.done() and not fut.cancelled():
                    self._wake()
                raise
        self.in_flight += 1
        return Slot(self.epoch, self.clock())

    def release(self) -> None:
        """Give a slot back and wake waiters if the limit allows."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        room = self.limit - self.in_flight
        while room > 0 and (self._waiters or self._background):
            fut = (self._waiters or self._background).popleft()
            if not fut.done():
                fut.set_result(None)
                room -= 1

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Hold a slot for one call; its outcome (success, overload or other failure) adapts the limit."""
        slot = await self.acquire()
        try:
            yield slot
        except TransientError as exc:
            if is_overload(exc.kind):
                self.on_overload(slot)
            raise
        else:
            self.on_success(slot, self.clock() - slot.started)
        finally:
            self.release()

    # ---- adapting -----------------------------------------------------------------------------------
    def on_success(self, slot: Slot, latency: float) -> None:
        """A call finished: grow the limit additively, unless its latency says the server is saturating."""
        self._samples += 1
        self._fast = latency if self._fast is None else 0.8 * self._fast + 0.2 * latency
        if self._slow is None:
            self._slow = latency
        slow = self._slow
        if (self._samples >= self.min_samples and self._fast > self.latency_tolerance * slow
                and self._fast - slow > self.min_growth):
            self._slow = 0.98 * self._slow + 0.02 * latency
            self.on_overload(slot)
            return
        self._slow = 0.98 * self._slow + 0.02 * latency
        if self._limit < self.ceiling:
            self._limit = min(float(self.ceiling), self._limit + 1.0 / self._limit)
            self._wake()

    def on_overload(self, slot: Slot) -> None:
        """An overload signal: halve the limit once per epoch (calls started before the last cut are ignored)."""
        if slot.epoch != self.epoch:
            return
        self.epoch += 1
        self.decreases += 1
        self._limit = max(1.0, self._limit * self.decrease)
        # Latency measured at the old load says nothing about the new one.
        self._fast = self._slow
