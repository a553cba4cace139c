"""Policy acceptance and the evolver call (system message, schema, malformed replies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.agents.awi import default_policy
from amemgym.evolve import LLMEvolver, PolicyLimits, policy_problem
from amemgym.evolve.evolver import Proposal
from amemgym.evolve.loop import decide
from amemgym.testing.scripted_model import scripted_client


@pytest.mark.parametrize("text, problem", [
    ("", "empty"), ("short", "shorter"), ("y" * 2001, "over the limit"),
    ("Keep the ${policy} notes about the user's life.", "placeholder"), (None, "not text"),
])
def test_broken_policies_have_a_problem(text, problem: str) -> None:
    assert problem in policy_problem(text, PolicyLimits())


def test_default_policy_is_acceptable() -> None:
    assert policy_problem(default_policy(), PolicyLimits()) is None


def test_decide_keeps_the_current_policy_unless_accepted() -> None:
    limits = PolicyLimits()
    assert decide(None, "p", limits) == ("not_evolved", None)
    assert decide(Proposal(None, [], "bad json"), "p", limits) == ("rejected", "bad json")
    assert decide(Proposal(default_policy(), []), default_policy(), limits)[0] == "unchanged"
    assert decide(Proposal(default_policy() + " Also hobbies.", ["x"]), default_policy(), limits) == ("accepted", None)


async def test_evolver_sends_a_real_system_message_and_a_strict_schema(tmp_path: Path) -> None:
    llm = scripted_client(lambda req: json.dumps({"changes": ["c"], "policy": "Keep notes on work and health."}),
        cache=tmp_path / "cache.sqlite")
    prop = await LLMEvolver(llm, role="agent").propose("old policy", "feedback text", seed=3)
    assert prop == Proposal("Keep notes on work and health.", ["c"])
    (req,) = llm.scripted.requests
    assert req.role == "agent" and req.messages[0]["role"] == "system" and len(req.messages[0]["content"]) > 200
    assert "old policy" in req.messages[1]["content"] and "feedback text" in req.messages[1]["content"]
    assert req.json_schema["additionalProperties"] is False


async def test_malformed_evolver_replies_become_a_proposal_problem(tmp_path: Path) -> None:
    llm = scripted_client(lambda req: json.dumps({"policy": "x", "changes": "not a list", "extra": 1}),
        cache=tmp_path / "cache.sqlite")
    prop = await LLMEvolver(llm).propose("old", "fb", seed=3)
    assert prop.policy is None and "2 attempts" in prop.problem
    assert llm.ledger.role("memory").schema_retries == 2


def test_a_policy_pasting_the_feedback_is_refused() -> None:
    feedback = "Q1. Which weekend plan suits me best right now?\n   1. Go hiking"
    pasted = "Keep notes on plans. Q1. Which weekend plan suits me best right now? Option 1."
    assert "copies the feedback" in policy_problem(pasted, PolicyLimits(), feedback)
    assert policy_problem("Keep notes on weekend plans and how they change.", PolicyLimits(), feedback) is None
