"""A served name that moves to another model (a hosted alias pointed at a new snapshot, ``GET /models`` unchanged)
must not let the response cache mix the old model's replies into a run of the new one.

The cache key holds the served name, not the snapshot that answers under it, so after the move an identical
prompt (an upper-bound question every agent asks) would replay the old snapshot's reply while the other calls
get the new one's: a score of two models with exit 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.errors import LLMError
from amemgym.llm import LLMClient, ResponseCache
from amemgym.testing.fake_endpoint import FakeEndpoint


def _ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _client(ep: FakeEndpoint, cache: Path) -> LLMClient:
    cfg = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", max_retries=0))
    return LLMClient(cfg, cache=ResponseCache(cache), backoff_base=0.001)


Moved = tuple[FakeEndpoint, Path]


@pytest.fixture
def moved(tmp_path: Path) -> Iterator[Moved]:
    """An endpoint whose replies named ``snap-1`` for two cached prompts, and now name ``snap-2``."""
    ep = FakeEndpoint(model="snap-1", served_models=("fake-model",)).start()
    cache = tmp_path / "cache.sqlite"

    async def first() -> None:
        llm = _client(ep, cache)
        for text in ("first question", "second question"):
            assert (await llm.chat("agent", _ask(text))).model == "snap-1"
        await llm.aclose()

    asyncio.run(first())
    ep.model = "snap-2"
    yield ep, cache
    ep.stop()


async def test_a_cached_reply_of_another_model_than_the_one_answering_is_fetched_again(moved: Moved) -> None:
    ep, cache = moved
    llm = _client(ep, cache)
    assert (await llm.chat("agent", _ask("a new question"))).model == "snap-2"
    calls = ep.calls
    again = await llm.chat("agent", _ask("first question"))
    assert not again.cached and again.model == "snap-2" and ep.calls == calls + 1
    await llm.aclose()
    later = _client(ep, cache)  # the fetched reply replaced the stale one
    assert (await later.chat("agent", _ask("a newer question"))).model == "snap-2"
    assert (await later.chat("agent", _ask("first question"))).cached
    await later.aclose()


async def test_a_fresh_reply_of_another_model_than_the_replies_replayed_before_it_fails_the_call(moved: Moved) -> None:
    ep, cache = moved
    llm = _client(ep, cache)
    replayed = await llm.chat("agent", _ask("second question"))
    assert replayed.cached and replayed.model == "snap-1"
    with pytest.raises(LLMError, match="model_changed.*snap-2.*response cache.*snap-1.*--no-cache"):
        await llm.chat("agent", _ask("a new question"))
    await llm.aclose()
