"""Running awaitables side by side without leaving any behind."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """Run ``aws`` concurrently and return their results in order.

    On the first failure the others are cancelled and awaited before that failure is raised. With a plain
    ``asyncio.gather`` they would go on calling the model for a result nobody reads, and an error of theirs
    would surface at shutdown as a traceback ("exception was never retrieved").
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
