"""The adaptive concurrency limit: AIMD between 1 and the ceiling, driven by a fake clock and fake outcomes."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import math
import random
from collections.abc import Iterator

import pytest

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.families.statetrack.progress import RunProgress
from amemgym.llm import LLMClient
from amemgym.llm.backends import PermanentError, TransientError
from amemgym.llm.limiter import AdaptiveLimiter, Slot, background_calls, is_background_call, is_overload
from amemgym.llm.usage import UsageLedger
from amemgym.testing.fake_endpoint import FakeEndpoint


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _fail(lim: AdaptiveLimiter, exc: Exception) -> None:
    with pytest.raises(type(exc)):
        async with lim.slot():
            raise exc


async def _succeed(lim: AdaptiveLimiter, clock: Clock | None = None, latency: float = 0.0) -> None:
    async with lim.slot():
        if clock is not None:
            clock.now += latency


@pytest.mark.parametrize("kind", ["http_429", "http_500", "http_503", "timeout"])
async def test_overload_halves_the_limit(kind: str) -> None:
    lim = AdaptiveLimiter(16)
    await _fail(lim, TransientError(kind))
    assert lim.limit == 8 and lim.in_flight == 0


@pytest.mark.parametrize("exc", [TransientError("connection"), TransientError("malformed_body"),
                                 TransientError("empty_choices"), PermanentError("http_400"), ValueError("x")])
async def test_faults_that_are_not_overload_leave_the_limit(exc: Exception) -> None:
    lim = AdaptiveLimiter(16)
    await _fail(lim, exc)
    assert lim.limit == 16 and lim.in_flight == 0


def test_overload_kinds() -> None:
    assert is_overload("http_429") and is_overload("http_502") and is_overload("timeout")
    assert not is_overload("http_404") and not is_overload("http_5") and not is_overload("connection")


async def test_one_overload_episode_costs_one_halving() -> None:
    lim = AdaptiveLimiter(16)
    # Eight calls in flight when the server starts refusing: all fail, but they started before the first cut.
    slots = [await lim.acquire() for _ in range(8)]
    for s in slots:
        lim.on_overload(s)
        lim.release()
    assert lim.limit == 8 and lim.decreases == 1
    # A call started after the cut that also fails is a new signal.
    await _fail(lim, TransientError("http_429"))
    assert lim.limit == 4 and lim.decreases == 2


async def test_never_below_one() -> None:
    lim = AdaptiveLimiter(5)
    for _ in range(20):
        await _fail(lim, TransientError("http_503"))
    assert lim.limit == 1
    await _succeed(lim)  # and a call still gets through
    assert lim.limit >= 1


async def test_success_grows_the_limit_additively_up_to_the_ceiling() -> None:
    lim = AdaptiveLimiter(10, start=2)
    assert lim.limit == 2
    for _ in range(2):  # about one step per limit's worth of calls: 2 + 1/2 + 1/2.5 = 2.9
        await _succeed(lim)
    assert lim.limit == 2
    await _succeed(lim)
    assert lim.limit == 3
    for _ in range(200):
        await _succeed(lim)
    assert lim.limit == 10 and lim.ceiling == 10


def test_start_is_clamped_to_the_ceiling_and_one() -> None:
    assert AdaptiveLimiter(4, start=100).limit == 4
    assert AdaptiveLimiter(4, start=0).limit == 1
    with pytest.raises(ValueError):
        AdaptiveLimiter(0)


async def test_latency_growth_counts_as_overload() -> None:
    clock = Clock()
    lim = AdaptiveLimiter(32, clock=clock, min_samples=10)
    for _ in range(30):
        await _succeed(lim, clock, 0.2)
    assert lim.limit == 32 and lim.decreases == 0
    for _ in range(10):
        await _succeed(lim, clock, 1.0)  # five times slower: the server is queueing
    assert lim.decreases >= 1 and lim.limit <= 16


async def test_steady_latency_never_decreases() -> None:
    clock = Clock()
    lim = AdaptiveLimiter(32, clock=clock, min_samples=5)
    for i in range(200):
        await _succeed(lim, clock, 0.2 + 0.05 * (i % 3))  # jitter within the tolerance
    assert lim.decreases == 0 and lim.limit == 32


async def test_infinite_tolerance_ignores_latency() -> None:
    clock = Clock()
    lim = AdaptiveLimiter(2, clock=clock, min_samples=1, latency_tolerance=float("inf"))
    for latency in [0.5] * 5 + [30.0] * 10:  # a CPU model writing long replies: slow, not overloaded
        await _succeed(lim, clock, latency)
    assert lim.decreases == 0 and lim.limit == 2


async def test_millisecond_jitter_is_not_latency_growth() -> None:
    clock = Clock()
    lim = AdaptiveLimiter(32, clock=clock, min_samples=5)
    for i in range(200):
        await _succeed(lim, clock, 0.001 if i % 10 else 0.02)  # 20x spikes, but only 20 ms
    assert lim.decreases == 0 and lim.limit == 32


async def test_in_flight_never_exceeds_the_limit_and_a_cut_applies_to_new_calls() -> None:
    lim = AdaptiveLimiter(4)
    gate = asyncio.Event()
    peak = 0
    running = 0

    async def call() -> None:
        nonlocal peak, running
        async with lim.slot():
            running += 1
            peak = max(peak, running)
            await gate.wait()
            running -= 1

    tasks = [asyncio.create_task(call()) for _ in range(12)]
    await asyncio.sleep(0)
    assert running == 4 and lim.in_flight == 4
    lim.on_overload(Slot(lim.epoch, 0.0))  # one of the running calls reports an overload
    assert lim.limit == 2
    gate.set()
    await asyncio.gather(*tasks)
    assert peak == 4 and lim.in_flight == 0


async def test_cancelled_waiter_does_not_leak_a_slot() -> None:
    lim = AdaptiveLimiter(1)
    await lim.acquire()
    waiter = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    lim.release()
    assert lim.in_flight == 0
    await asyncio.wait_for(lim.acquire(), 1)  # the slot is free again
    assert lim.in_flight == 1


async def test_waiting_background_calls_go_after_every_waiting_foreground_call() -> None:
    lim = AdaptiveLimiter(1)
    await lim.acquire()
    order: list[str] = []

    async def call(name: str) -> None:
        with background_calls() if name.startswith("eval") else contextlib.nullcontext():
            await lim.acquire()
        order.append(name)
        await asyncio.sleep(0)
        lim.release()

    tasks = []
    for name in ("eval1", "turn1", "eval2", "turn2", "eval3"):
        tasks.append(asyncio.create_task(call(name)))
        await asyncio.sleep(0)  # each is waiting before the next arrives
    assert lim.in_flight == 1 and not order
    lim.release()
    await asyncio.gather(*tasks)
    assert order == ["turn1", "turn2", "eval1", "eval2", "eval3"] and lim.in_flight == 0


async def test_background_calls_take_free_room_at_once_and_the_mark_ends_with_its_block() -> None:
    lim = AdaptiveLimiter(3)
    with background_calls():
        assert is_background_call()
        for _ in range(3):
            await asyncio.wait_for(lim.acquire(), 1)  # reordering only: room is never held back
    assert lim.in_flight == 3 and not is_background_call()


async def test_a_cancelled_background_waiter_passes_its_turn_on() -> None:
    lim = AdaptiveLimiter(1)
    await lim.acquire()
    with background_calls():
        waiter = asyncio.create_task(lim.acquire())
    behind = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0)
    lim.release()  # wakes the foreground call first; the background one waits on
    await asyncio.wait_for(behind, 1)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    lim.release()
    assert lim.in_flight == 0
    await asyncio.wait_for(lim.acquire(), 1)


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint() as ep:
        yield ep


def _client(ep: FakeEndpoint, **settings: object) -> LLMClient:
    cfg = EndpointConfig(base_url=ep.base_url, model="fake-model", timeout_s=5, max_retries=3,
                         **settings)  # type: ignore[arg-type]
    return LLMClient(LLMConfig(default=cfg), backoff_base=0.001)


async def test_client_backs_off_on_429_and_keeps_the_ceiling(endpoint: FakeEndpoint) -> None:
    endpoint.latency = 0.02
    llm = _client(endpoint, max_concurrency=6)
    prompts = [[{"role": "user", "content": f"question number {i}"}] for i in range(30)]
    await asyncio.gather(*(llm.chat("agent", p) for p in prompts))
    (lim,) = llm.ledger.limiters.values()
    assert endpoint.max_in_flight <= 6 and lim.limit == 6 and lim.decreases == 0

    endpoint.force_faults, endpoint.force_budget = {"*": "http_429"}, 3
    more = [[{"role": "user", "content": f"another question {i}"}] for i in range(4)]
    await asyncio.gather(*(llm.chat("agent", p) for p in more))
    assert lim.decreases >= 1 and 1 <= lim.limit < 6
    assert llm.ledger.roles["agent"].failures == 0  # the calls themselves were retried and succeeded
    await llm.aclose()


def test_progress_shows_the_current_limit() -> None:
    ledger = UsageLedger()
    ledger.limiters["http://x"] = AdaptiveLimiter(64, start=12)
    progress = RunProgress(live=False)
    progress._ledger = lambda: ledger
    assert "limit 12" in progress._info()


def test_embedded_server_limit_ignores_latency_but_http_endpoints_do_not() -> None:
    llm = LLMClient()
    assert llm._limit("embedded:qwen", 2).latency_tolerance == float("inf")
    assert llm._limit("http://127.0.0.1:1/v1|m", 64).latency_tolerance == 2.0
    assert set(llm.ledger.limiters) == {"embedded:qwen", "http://127.0.0.1:1/v1|m"}


async def _queueing_server(slots: int, seconds: float, fault_at: float | None = None) -> tuple[float, AdaptiveLimiter]:
    """A server of ``slots`` slots that queues the rest, as an inference server's batch, simulated on a clock.

    Callers always have more calls ready than the limit allows. Each call waits in the server's queue for a
    slot, then holds it for a lognormal service time (median 0.1 s, log-sd 0.5, seeded), so queueing shows
    as latency. ``fault_at``: the first call finishing after that moment is a 503 instead.
    Returns the share of slot-seconds busy after a warm-up of 5 s, and the limiter.
    """
    now = [0.0]
    lim = AdaptiveLimiter(128, clock=lambda: now[0])
    rng = random.Random(7)
    queue: collections.deque[Slot] = collections.deque()
    serving: list[tuple[float, int, Slot]] = []
    busy = 0.0
    n = 0
    while now[0] < seconds:
        while lim.in_flight < lim.limit:
            queue.append(await lim.acquire())
        while queue and len(serving) < slots:
            service = 0.1 * math.exp(rng.gauss(0.0, 0.5))
            heapq.heappush(serving, (now[0] + service, n, queue.popleft()))
            n += 1
            if now[0] >= 5.0:
                busy += service
        finish, _, slot = heapq.heappop(serving)
        now[0] = finish
        if fault_at is not None and finish >= fault_at:
            fault_at = None
            lim.on_overload(slot)
        else:
            lim.on_success(slot, now[0] - slot.started)
        lim.release()
    return busy / (slots * (seconds - 5.0)), lim


@pytest.mark.parametrize("slots", [16, 64])
async def test_queueing_at_the_server_never_leaves_its_slots_idle(slots: int) -> None:
    # Queueing doubles the latency long before the limit falls to the server's slots; the limit may come
    # down (it need not keep a deep queue at the server), but never so far that a slot waits for a call.
    busy, lim = await _queueing_server(slots, 120.0)
    assert busy > 0.97
    assert lim.limit >= slots


async def test_a_5xx_while_queueing_still_halves_the_limit() -> None:
    _, before = await _queueing_server(16, 30.0)
    _, lim = await _queueing_server(16, 30.0, fault_at=29.9)
    assert lim.decreases == before.decreases + 1
