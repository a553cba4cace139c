"""gather_or_cancel: results in order, and on a failure no sibling is left running with nobody to read it."""

from __future__ import annotations

import asyncio

import pytest

from amemgym.concurrency import gather_or_cancel
from amemgym.errors import LLMError


async def test_results_come_back_in_the_order_given() -> None:
    async def after(seconds: float, value: int) -> int:
        await asyncio.sleep(seconds)
        return value

    assert await gather_or_cancel(after(0.02, 1), after(0.0, 2), after(0.01, 3)) == [1, 2, 3]


async def test_the_first_failure_cancels_the_rest_before_it_is_raised() -> None:
    outcome: list[str] = []
    release = asyncio.Event()  # never set: only a cancellation ends the wait

    async def waits() -> None:
        try:
            await release.wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    async def fails() -> None:
        await asyncio.sleep(0)
        raise LLMError("agent call failed after 4 attempts: timeout")

    with pytest.raises(LLMError, match="timeout"):
        await gather_or_cancel(waits(), fails(), waits())
    assert outcome == ["cancelled", "cancelled"]  # settled before the failure reached the caller
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
