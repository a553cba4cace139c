"""A conversation turn the model keeps answering with nothing (found by the README's demo: the 0.5B simulator
quoted the assistant back at it, and the agent model then ended its reply at once on every attempt).

Such a turn is kept as an empty turn, counted and said; a scored answer that stays empty still fails the user,
so an endpoint that answers nothing never scores zero with exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import LLMConfig
from amemgym.errors import LLMError
from amemgym.families.statetrack.simulate.simulator import echoes_assistant
from amemgym.families.statetrack.validity.sim_audit import degenerate_flags
from amemgym.llm import LLMClient, ResponseCache
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, request_kind

REPLY = ("To plan your trip, consider the following:\n\n1. **Budget**: Determine how much you can afford to spend "
         "on your trip. This will help you decide how much you can realistically spend on your meals and other "
         "expenses.\n\n2. **Time Frame**: Consider the time frame you have to travel.")
# What the simulator wrote back, word for word from the demo's failing run (the name changed).
QUOTED = ("Sure, here's a personalized message for Rene:\n\n---\n\n**To plan your trip, consider the following:**"
          "\n\n1. **Budget**: Determine how much you can afford to spend on your trip. This will help you decide "
          "how much you can")


class _Scripted:
    """Answers each attempt with the next fault of ``faults`` (the last one repeated)."""

    backend_id = "scripted-faults:test"

    def __init__(self, *faults: str) -> None:
        self.faults, self.sent = faults, 0

    async def complete(self, req: object) -> object:
        from amemgym.llm.backends import TransientError

        kind = self.faults[min(self.sent, len(self.faults) - 1)]
        self.sent += 1
        raise TransientError(kind, kind)


async def test_an_outage_that_ends_on_one_empty_reply_is_a_failure_not_silence() -> None:
    # Down five times, then one empty reply: the server's failure, not the model's silence.
    llm = LLMClient(LLMConfig(cache=False), backends={"agent": _Scripted(*["http_503"] * 5, "empty_reply")},
                    backoff_base=0.001)  # type: ignore[dict-item]
    with pytest.raises(LLMError, match="empty_reply"):
        await llm.chat("agent", [{"role": "user", "content": "hello"}], keep_empty=True)
    assert llm.ledger.to_dict()["agent"]["empty_kept"] == 0


async def test_a_turn_empty_on_every_attempt_is_kept_counted_and_never_cached(tmp_path: Path) -> None:
    from amemgym.llm.health import empty_note

    backend = _Scripted("empty_reply")  # nothing, however it is sampled
    llm = LLMClient(LLMConfig(), backends={"agent": backend}, cache=ResponseCache(tmp_path / "c.sqlite"),
                    backoff_base=0.001)  # type: ignore[dict-item]
    turn = [{"role": "user", "content": "hello"}]
    # A role that never answered is a broken endpoint, not a silent model: the turn fails.
    with pytest.raises(LLMError, match="empty_reply"):
        await llm.chat("agent", turn, keep_empty=True)
    llm.ledger.role("agent").calls = 1  # as after one answer
    sent = backend.sent
    res = await llm.chat("agent", turn, keep_empty=True)
    assert res.text == "" and backend.sent == sent + 6
    usage = llm.ledger.to_dict()["agent"]
    assert usage["empty_kept"] == 1 and usage["failures"] == 1 and usage["faults"] == {"empty_reply": 12}
    note = empty_note(llm.ledger.to_dict())
    assert note is not None and "1 conversation turns" in note and "agent 1" in note
    await llm.chat("agent", turn, keep_empty=True)
    assert backend.sent == sent + 12  # never cached: a healthy re-run asks the model again
    with pytest.raises(LLMError, match="empty_reply"):
        await llm.chat("agent", turn)  # without keep_empty (a scored answer) the silence is no answer
    assert empty_note({"agent": {"calls": 3}}) is None


def test_a_quoted_reply_framed_as_a_message_is_an_echo() -> None:
    assert echoes_assistant(QUOTED, REPLY)
    assert "near_echo" in degenerate_flags(QUOTED, "Can you help me plan this?", REPLY, [])
    # A user who picks up a few of the reply's words is talking, not echoing.
    talk = "The budget part makes sense. I fly for work though, so how much time do I need between trips?"
    assert not echoes_assistant(talk, REPLY)
    assert degenerate_flags(talk, "Can you help me plan this?", REPLY, []) == []


def _silent_replies(body: dict[str, Any]) -> Any:
    # After its first turn the agent's conversation replies are empty; its answers, the simulator and everything
    # else are served.
    later = request_kind(body) == "chat" and len(body.get("messages") or []) > 2
    return "" if later else default_responder(body)


def test_a_run_whose_agent_replies_stay_empty_finishes_and_says_so(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.responder = _silent_replies
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--config", "tiny", "--out", str(out), "--limit", "1",
                                      "--set", "llm.default.max_retries=1"])
    assert result.exit_code == 0, result.output
    assert "conversation turns got an empty reply on every attempt (agent " in result.output
    turns = [m for p in (out / "users").glob("*/sessions.jsonl") for line in p.read_text().splitlines()
             for m in json.loads(line)["messages"]]
    replies = [m["content"] for m in turns if m["role"] == "assistant"]
    assert replies[0] and replies.count("") == len(replies) - 1
    usage = json.loads((out / "usage.json").read_text())["cumulative"]["agent"]
    assert usage["empty_kept"] == len(replies) - 1 and usage["failures"] == 0
    assert json.loads((out / "metrics.json").read_text())["complete"]


def test_a_run_whose_answers_stay_empty_fails_the_user(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.responder = lambda body: "" if request_kind(body) in ("answer", "probe") else default_responder(body)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--config", "tiny", "--out", str(out), "--limit", "1",
                                      "--set", "llm.default.max_retries=1"])
    assert result.exit_code != 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert not metrics["complete"]


def test_a_server_that_answers_nothing_leaves_no_mark_once_repaired(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    """Its silence fails the user, and nothing of it is recorded or cached: the same command on the repaired
    server scores as a clean run does."""
    args = ["run", "--config", "tiny", "--limit", "1", "--set", "llm.default.max_retries=1"]
    clean = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "clean"), "--no-cache"])
    assert clean.exit_code == 0, clean.output
    endpoint.force_faults = {"*": "empty_content"}
    broken = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert broken.exit_code != 0
    endpoint.force_faults = {}
    repaired = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert repaired.exit_code == 0, repaired.output
    metrics = [json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("clean", "run")]
    assert [m["per_user"] for m in metrics][0] == [m["per_user"] for m in metrics][1]


def test_a_model_silent_now_and_then_is_not_called_a_broken_endpoint() -> None:
    from amemgym.llm.health import endpoint_problems

    # 80 answered turns and 20 turns silent on all 6 attempts: 120 empty attempts against 80 replies. The
    # silence is the model's (kept, scored), not the server's: no endpoint problem.
    silent = {"calls": 80, "empty_kept": 20, "empty_kept_attempts": 120, "faults": {"empty_reply": 120}}
    assert endpoint_problems({"agent": silent}) == []
    # The same empty attempts that were not kept (the role failed) still say the endpoint is broken.
    failed = {"calls": 80, "failures": 20, "faults": {"empty_reply": 120}}
    assert [p["role"] for p in endpoint_problems({"agent": failed})] == ["agent"]
    # Kept silence beside a real outage: the outage is still counted.
    mixed = {"calls": 10, "empty_kept": 20, "empty_kept_attempts": 120,
             "faults": {"empty_reply": 120, "malformed_body": 30}}
    problems = endpoint_problems({"agent": mixed})
    assert problems and problems[0]["unusable"] == 30 and problems[0]["attempts"] == 40


async def test_a_kept_turn_counts_the_attempts_it_took() -> None:
    backend = _Scripted("empty_reply")
    llm = LLMClient(LLMConfig(cache=False), backends={"agent": backend}, backoff_base=0.001)  # type: ignore[dict-item]
    llm.ledger.role("agent").calls = 1
    await llm.chat("agent", [{"role": "user", "content": "hello"}], keep_empty=True)
    usage = llm.ledger.to_dict()["agent"]
    assert usage["empty_kept"] == 1 and usage["empty_kept_attempts"] == backend.sent == 6
