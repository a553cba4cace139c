"""Replies of the wrong shape that once passed as answers (found by probing with a rewriting proxy): calls to
tools nobody offered, a 200 carrying an error, a generation the server ended with "error". Each is a fault of
the server, retried and never cached; none is taken for the model's silence."""

from __future__ import annotations

from typing import Any

import pytest

from amemgym.config import LLMConfig
from amemgym.errors import LLMError
from amemgym.llm import LLMClient
from amemgym.llm.backends import TransientError
from amemgym.llm.client import _usable
from amemgym.llm.openai_backend import _chat_result
from amemgym.llm.types import ToolCallOut

CALLS = [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]


def reply(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}, **extra}


def kind(resp: Any, **kwargs: Any) -> str:
    with pytest.raises(TransientError) as info:
        _chat_result(resp, "m", 0.1, **kwargs)
    return info.value.kind


def test_calls_to_tools_nobody_offered_are_a_malformed_reply() -> None:
    resp = reply({"role": "assistant", "content": None, "tool_calls": CALLS}, "tool_calls")
    assert kind(resp, tools_offered=False) == "malformed_body"
    assert _chat_result(resp, "m", 0.1, tools_offered=True).tool_calls  # offered: a valid reply


def test_a_200_with_an_error_body_is_the_servers_fault_not_silence() -> None:
    assert kind({"error": {"message": "Provider returned error", "code": 429}}) == "error_body"
    assert kind({"choices": []}) == "empty_choices"
    assert kind(reply({"role": "assistant", "content": None})) == "empty_reply"  # a choice, nothing in it


@pytest.mark.parametrize("finish", ["error", "abort"])
def test_a_generation_the_server_ended_in_error_is_retried(finish: str) -> None:
    assert kind(reply({"role": "assistant", "content": "Based on"}, finish)) == "finish_error"


def test_a_judged_reply_is_judged_even_when_it_also_calls_tools() -> None:
    call = ToolCallOut.from_wire(CALLS[0])
    assert not _usable("Sorry, busy.", lambda text: False, (call,))
    assert _usable("", None, (call,))


class _Failing:
    backend_id = "failing:test"

    def __init__(self, fault: str) -> None:
        self.fault, self.sent = fault, 0

    async def complete(self, req: object) -> object:
        self.sent += 1
        raise TransientError(self.fault, self.fault)


@pytest.mark.parametrize("fault", ["error_body", "empty_choices", "finish_error"])
async def test_a_server_fault_on_a_conversation_turn_fails_it_instead_of_keeping_silence(fault: str) -> None:
    backend = _Failing(fault)
    llm = LLMClient(LLMConfig(cache=False), backends={"agent": backend}, backoff_base=0.001)  # type: ignore[dict-item]
    with pytest.raises(LLMError, match=fault):
        await llm.chat("agent", [{"role": "user", "content": "hi"}], keep_empty=True)
    usage = llm.ledger.roles["agent"]
    assert usage.empty_kept == 0 and usage.failures == 1 and backend.sent == 6


def test_an_endpoint_problem_stays_said_after_a_resume_and_keeps_the_run_off_the_ranking(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Found by probing: the verdict came from the last invocation only, so a no-op re-run dropped it, and no
    reader ever showed it."""
    import json

    from typer.testing import CliRunner

    from amemgym.cli import app
    from amemgym.testing.fake_endpoint import FakeEndpoint

    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("amemgym.llm.client._Backoff.__call__", lambda self, state: 0.001)  # many retries, no waits
    out = tmp_path / "run"
    args = ["run", "--config", "tiny", "--out", str(out), "--limit", "1", "--set", "llm.default.max_retries=30"]
    with FakeEndpoint(fault_rate=0.7, fault_kinds=("empty_choices",), seed=3) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "endpoint problem" in first.output
    with FakeEndpoint(seed=3) as ep:  # healthy now; the run is finished, so nothing is asked again
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "metrics.json").read_text())["endpoint_problems"]
    board = CliRunner().invoke(app, ["leaderboard", str(out)], env={"COLUMNS": "300"})
    assert "endpoint problem" in board.output, board.output


def test_a_key_in_a_path_parameter_is_neither_shown_nor_kept() -> None:
    from amemgym.llm.openai_backend import OpenAIBackend
    from amemgym.redact import redact
    from amemgym.urls import public_url

    url = "http://127.0.0.1:9/v1;key=pathparam0SECRET123"
    assert public_url(url) == "http://127.0.0.1:9/v1"
    OpenAIBackend(url, "m", None)
    assert "pathparam0SECRET123" not in redact(f"GET {url} failed")


def test_a_huge_error_message_is_kept_to_one_readable_line() -> None:
    import json

    from amemgym.llm.openai_backend import MAX_ERROR_CHARS, status_error

    body = json.dumps({"error": {"message": "x" * 200_000}}).encode()
    err = status_error(422, body, {})
    assert len(str(err)) < MAX_ERROR_CHARS + 100 and "200,000 characters" in str(err)


def test_an_endpoint_problem_is_cleared_by_a_rerun_that_redid_the_work_on_a_healthy_server(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Found by probing: counted over every invocation, the verdict outlived the server's repair for good, though
    no unusable reply is ever cached, let alone scored."""
    import json

    from typer.testing import CliRunner

    from amemgym.cli import app
    from amemgym.testing.fake_endpoint import FakeEndpoint

    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("amemgym.llm.client._Backoff.__call__", lambda self, state: 0.001)
    out = tmp_path / "run"
    args = ["run", "--config", "tiny", "--out", str(out), "--limit", "1", "--set", "llm.default.max_retries=2"]
    with FakeEndpoint(force_faults={"*": "empty_choices"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        broken = CliRunner().invoke(app, args)
    assert broken.exit_code == 1
    assert json.loads((out / "metrics.json").read_text())["endpoint_problems"]
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        healed = CliRunner().invoke(app, args)
    assert healed.exit_code == 0, healed.output
    assert json.loads((out / "metrics.json").read_text())["endpoint_problems"] == []
    assert "endpoint problem" not in healed.output


@pytest.mark.parametrize("resp", [
    {"model": "m", "choices": ["a bare string for a choice"]},
    {"model": "m", "choices": [{"index": 0, "message": "a bare string for a message"}]},
    {"model": "m", "choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": ["stop"]}]},
], ids=["choice", "message", "finish_reason"])
def test_a_choice_or_message_that_is_not_an_object_is_a_malformed_reply(resp: dict[str, Any]) -> None:
    """Found by probing: these failed as ``unexpected`` (an AttributeError's text), which the run's endpoint-problem
    check does not count, so an endpoint answering only such replies was not named as the cause."""
    assert kind(resp) == "malformed_body"
