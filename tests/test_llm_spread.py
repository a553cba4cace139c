"""One endpoint's calls spread over HTTP clients of a few calls each (llm/client.py ``_Spread``)."""

from __future__ import annotations

import asyncio

from amemgym.llm.client import CALLS_PER_HTTP_CLIENT, _Spread
from amemgym.llm.types import ChatRequest, ChatResult


class _Counting:
    """A backend that records the most calls it carried at once."""

    backend_id = "openai:http://x.test/v1"

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate, self.now, self.most, self.calls = gate, 0, 0, 0

    async def complete(self, req: ChatRequest) -> ChatResult:
        self.now += 1
        self.most = max(self.most, self.now)
        self.calls += 1
        await self.gate.wait()
        self.now -= 1
        return ChatResult(text=req.messages[0]["content"], model="m")

    async def model_identity(self) -> str:
        return "m"


def _spread(gate: asyncio.Event) -> tuple[_Spread, list[_Counting]]:
    made: list[_Counting] = []

    def make() -> _Counting:
        made.append(_Counting(gate))
        return made[-1]

    return _Spread(make), made


async def test_concurrent_calls_open_clients_of_at_most_a_few_calls_each() -> None:
    gate = asyncio.Event()
    spread, made = _spread(gate)
    n = 5 * CALLS_PER_HTTP_CLIENT - 3
    calls = [asyncio.create_task(spread.complete(ChatRequest("agent", ({"role": "user", "content": str(i)},))))
             for i in range(n)]
    await asyncio.sleep(0)
    gate.set()
    replies = await asyncio.gather(*calls)
    assert [r.text for r in replies] == [str(i) for i in range(n)]  # each reply is its own request's
    assert len(made) == 5
    assert all(b.most <= CALLS_PER_HTTP_CLIENT for b in made)
    assert sum(b.calls for b in made) == n


async def test_calls_one_at_a_time_stay_on_one_client() -> None:
    gate = asyncio.Event()
    gate.set()
    spread, made = _spread(gate)
    for i in range(3 * CALLS_PER_HTTP_CLIENT):
        await spread.complete(ChatRequest("agent", ({"role": "user", "content": str(i)},)))
    assert len(made) == 1 and spread.backend_id == made[0].backend_id
    assert await spread.model_identity() == "m"
