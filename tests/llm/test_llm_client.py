"""The LLM seam against a real HTTP server: retries, no-retry on 4xx, cache, dedup, limits, accounting, secrets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.errors import LLMError
from amemgym.llm import LLMClient, ResponseCache
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, minimal_instance

SECRET = "sk-test-SECRET-123456"
HELLO = [{"role": "user", "content": "Suggest one quick dinner for tonight please"}]

# Every transient fault and the kind the client records it under.
TRANSIENT = {
    "http_429": "http_429", "http_429_retry_after": "http_429", "http_500": "http_500", "http_502": "http_502",
    "http_503": "http_503", "reset": "connection", "timeout": "timeout", "truncated": "malformed_body",
    "malformed": "malformed_body", "empty_choices": "empty_choices",
}


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(timeout_sleep=0.8) as ep:
        yield ep


@pytest.fixture(autouse=True)
def _secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMEMGYM_TEST_KEY", SECRET)


def client(ep: FakeEndpoint, tmp_path: Path | None = None, **endpoint: object) -> LLMClient:
    settings: dict[str, object] = dict(base_url=ep.base_url, model="fake-model", api_key_env="AMEMGYM_TEST_KEY",
                                       timeout_s=0.5, max_retries=3)
    settings.update(endpoint)
    cache = ResponseCache(tmp_path / "cache.sqlite") if tmp_path is not None else None
    return LLMClient(LLMConfig(default=EndpointConfig(**settings)), cache=cache, backoff_base=0.001)


@pytest.mark.parametrize("fault", sorted(TRANSIENT))
async def test_transient_faults_are_retried_and_counted(endpoint: FakeEndpoint, fault: str) -> None:
    endpoint.force_faults, endpoint.force_budget = {"*": fault}, 2
    llm = client(endpoint)
    res = await llm.chat("agent", HELLO)
    usage = llm.ledger.roles["agent"]
    assert res.text == default_responder({"messages": HELLO})
    assert endpoint.calls == 3
    assert usage.faults == {TRANSIENT[fault]: 2} and usage.retries == 2 and usage.failures == 0
    await llm.aclose()


async def test_exhausted_retries_raise_and_count_a_failure(endpoint: FakeEndpoint) -> None:
    endpoint.force_faults = {"*": "http_503"}
    llm = client(endpoint, max_retries=2)
    with pytest.raises(LLMError, match="after 3 attempts"):
        await llm.chat("simulator", HELLO)
    usage = llm.ledger.roles["simulator"]
    assert endpoint.calls == 3 and usage.retries == 2 and usage.failures == 1 and usage.calls == 0
    await llm.aclose()


async def test_client_error_is_not_retried(endpoint: FakeEndpoint) -> None:
    endpoint.bad_request = True
    llm = client(endpoint)
    with pytest.raises(LLMError, match="not retried"):
        await llm.chat("judge", HELLO)
    usage = llm.ledger.roles["judge"]
    assert endpoint.calls == 1 and usage.retries == 0 and usage.failures == 1 and usage.faults == {"http_400": 1}
    await llm.aclose()


class _RecordingBackoff:
    """Wraps the client's backoff to see the delay it chose for each retry."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.delays: list[float] = []

    def __call__(self, state: object) -> float:
        delay = self.inner(state)  # type: ignore[operator]
        self.delays.append(delay)
        return delay


async def test_retry_after_is_honoured(endpoint: FakeEndpoint) -> None:
    endpoint.force_faults, endpoint.force_budget, endpoint.retry_after = {"*": "http_429_retry_after"}, 1, 0.2
    llm = client(endpoint)
    llm._backoff = recorder = _RecordingBackoff(llm._backoff)  # type: ignore[assignment]
    await llm.chat("agent", HELLO)
    assert len(recorder.delays) == 1 and recorder.delays[0] >= 0.2
    await llm.aclose()


async def test_a_retry_after_beyond_the_longest_wait_fails_at_once_saying_so(endpoint: FakeEndpoint) -> None:
    # Before: each of the 4 attempts waited the longest wait (120 s here), the call silent for over 6 minutes.
    endpoint.force_faults, endpoint.retry_after = {"*": "http_429_retry_after"}, 99_999
    llm = client(endpoint)
    with pytest.raises(LLMError, match=r"after 1 attempt: http_429; the endpoint asks to wait 99,999 s .*later"):
        await llm.chat("agent", HELLO)
    assert endpoint.stats()["calls"] == 1
    await llm.aclose()


async def test_429_without_retry_after_uses_the_short_backoff(endpoint: FakeEndpoint) -> None:
    endpoint.force_faults, endpoint.force_budget = {"*": "http_429"}, 1
    llm = client(endpoint)
    llm._backoff = recorder = _RecordingBackoff(llm._backoff)  # type: ignore[assignment]
    await llm.chat("agent", HELLO)
    assert len(recorder.delays) == 1 and recorder.delays[0] <= 0.001
    await llm.aclose()


async def test_identical_request_is_served_from_cache(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    llm = client(endpoint, tmp_path)
    first = await llm.chat("agent", HELLO)
    second = await llm.chat("agent", HELLO)
    assert endpoint.calls == 1 and second.cached and second.text == first.text
    assert llm.ledger.roles["agent"].cache_hits == 1 and llm.ledger.roles["agent"].calls == 1
    await llm.aclose()  # writes the batched reply to the file
    again = client(endpoint, tmp_path)  # a new process would see the same persistent cache
    assert (await again.chat("agent", HELLO)).cached and endpoint.calls == 1
    await again.aclose()


async def test_usage_is_counted_per_role(endpoint: FakeEndpoint) -> None:
    llm = client(endpoint)
    res = await llm.chat("agent", HELLO)
    await llm.chat("simulator", [{"role": "user", "content": "one two three"}])
    agent, sim = llm.ledger.roles["agent"], llm.ledger.roles["simulator"]
    assert (agent.calls, agent.prompt_tokens, agent.completion_tokens) == (1, 7, len(res.text.split()))
    assert (sim.calls, sim.prompt_tokens) == (1, 3)
    assert llm.ledger.totals().prompt_tokens == 10
    await llm.aclose()


async def test_concurrency_limit_per_endpoint(endpoint: FakeEndpoint) -> None:
    endpoint.latency = 0.05
    llm = client(endpoint, max_concurrency=2)
    prompts = [[{"role": "user", "content": f"question number {i}"}] for i in range(8)]
    await asyncio.gather(*(llm.chat("agent" if i % 2 else "simulator", p) for i, p in enumerate(prompts)))
    assert endpoint.calls == 8 and endpoint.max_in_flight == 2
    await llm.aclose()


async def test_identical_concurrent_requests_are_sent_once(endpoint: FakeEndpoint) -> None:
    endpoint.latency = 0.05
    llm = client(endpoint)  # no cache: only in-flight deduplication can save the calls
    results = await asyncio.gather(*(llm.chat("agent", HELLO) for _ in range(5)))
    assert endpoint.calls == 1 and len({r.text for r in results}) == 1
    assert llm.ledger.roles["agent"].cache_hits == 4
    await llm.aclose()


async def test_chat_json_retries_a_reply_that_breaks_the_schema(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
              "required": ["colour"], "additionalProperties": False}
    endpoint.force_faults, endpoint.force_budget = {"structured": "schema_break"}, 1
    llm = client(endpoint, tmp_path)
    value, _ = await llm.chat_json("generator", HELLO, schema,
                                   check=lambda v: None if v.get("colour") in ("red", "blue") else "bad colour")
    assert value == {"colour": "red"} == minimal_instance(schema)
    assert endpoint.calls == 2 and llm.ledger.roles["generator"].schema_retries == 1
    await llm.aclose()


def test_minimal_instance_covers_refs_arrays_and_bounds() -> None:
    schema = {"type": "object", "required": ["items", "n", "flag", "opt"], "$defs": {"I": {"const": "k"}},
              "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/I"}, "minItems": 2},
                             "n": {"type": "integer", "minimum": 3}, "flag": {"type": "boolean"},
                             "opt": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]}}}
    assert minimal_instance(schema) == {"items": ["k", "k"], "n": 3, "flag": False, "opt": "xx"}


async def test_api_key_is_sent_but_never_stored_or_shown(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    llm = client(endpoint, tmp_path, max_retries=1)
    await llm.chat("agent", HELLO)
    errors: list[LLMError] = []
    for fault in ("http_400", "http_500", "reset", "timeout"):
        endpoint.force_faults = {"*": fault}
        with pytest.raises(LLMError) as info:
            await llm.chat("agent", [{"role": "user", "content": f"now fail with {fault}"}])
        errors.append(info.value)
    await llm.aclose()
    assert endpoint.authorizations == {f"Bearer {SECRET}"}  # the key did reach the server
    for exc in errors:
        chain = [exc, exc.__cause__, exc.__context__]
        assert all(SECRET not in f"{e!s} {e!r}" for e in chain if e is not None)
    llm.cache.close()  # type: ignore[union-attr]
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert SECRET not in json.dumps(llm.ledger.to_dict()) + json.dumps(llm.describe())


class _CutBackend:
    """Every reply ends at its token limit, as a server reports it."""

    backend_id = "cut:test"

    async def complete(self, req: object) -> object:
        from amemgym.llm.types import ChatResult

        return ChatResult(text="The answer is", model="cut-model", completion_tokens=8, finish_reason="length")


async def test_replies_cut_at_their_token_limit_are_counted_and_said() -> None:
    from amemgym.llm.health import truncation_note

    llm = LLMClient(LLMConfig(cache=False), backends={"agent": _CutBackend()})  # type: ignore[dict-item]
    await llm.chat("agent", [{"role": "user", "content": "a question"}])
    await llm.chat("agent", [{"role": "user", "content": "another"}])
    usage = llm.ledger.to_dict()
    assert usage["agent"]["truncated"] == 2 and usage["total"]["truncated"] == 2
    note = truncation_note(usage)
    assert note is not None and "2 of 2 fresh replies" in note and "agent 2" in note
    assert truncation_note({"agent": {"calls": 5, "truncated": 0}}) is None


class _GreedyEmptyBackend:
    """A greedy decoder that answers one request with nothing, every time it is sent as is (found by the
    README's demo: the embedded model's empty reply failed a user after six identical attempts)."""

    backend_id = "greedy:test"

    def __init__(self, fault: str) -> None:
        self.fault, self.sent = fault, []

    async def complete(self, req: object) -> object:
        from amemgym.llm.backends import TransientError
        from amemgym.llm.types import ChatResult

        self.sent.append(req)
        if len(self.sent) == 1 or getattr(req, "temperature", 0.0) == 0.0:
            raise TransientError(self.fault, "fault")
        return ChatResult(text="a reply", model="greedy-model", completion_tokens=2)


async def test_an_empty_reply_is_retried_with_a_little_sampling_and_a_server_fault_unchanged() -> None:
    backend = _GreedyEmptyBackend("empty_reply")
    llm = LLMClient(LLMConfig(cache=False), backends={"agent": backend}, backoff_base=0.001)  # type: ignore[dict-item]
    res = await llm.chat("agent", [{"role": "user", "content": "a question"}], temperature=0.0, seed=3)
    assert res.text == "a reply" and len(backend.sent) == 2
    first, second = backend.sent
    assert first.temperature == 0.0 and second.temperature == 0.5 and second.seed != first.seed
    assert second.messages == first.messages
    server = _GreedyEmptyBackend("server_error")
    llm = LLMClient(LLMConfig(cache=False), backends={"agent": server}, backoff_base=0.001)  # type: ignore[dict-item]
    with pytest.raises(LLMError):
        await llm.chat("agent", [{"role": "user", "content": "a question"}], temperature=0.0, seed=3)
    assert all(r.temperature == 0.0 and r.seed == server.sent[0].seed for r in server.sent)  # unchanged


async def test_tokens_of_a_reply_rejected_after_it_arrived_are_counted(endpoint: FakeEndpoint) -> None:
    """An empty reply that says what it cost was paid for: its tokens are in the usage, under no call."""
    endpoint.force_faults, endpoint.force_budget = {"*": "empty_content"}, 2
    llm = client(endpoint)
    await llm.chat("agent", HELLO)
    usage = llm.ledger.roles["agent"]
    assert usage.faults == {"empty_reply": 2} and usage.calls == 1
    prompt = endpoint.completion({"messages": HELLO}, "")["usage"]["prompt_tokens"]
    assert prompt > 0 and usage.prompt_tokens == 3 * prompt and usage.prompt_tokens_processed == 3 * prompt
    await llm.aclose()
