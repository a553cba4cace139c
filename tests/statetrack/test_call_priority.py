"""A run's evaluation and upper-bound calls wait behind its conversations' calls (docs/design.md §10)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.data.model import Environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.runner import Runner
from amemgym.llm.limiter import is_background_call
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript


async def test_only_evaluation_and_upper_bound_calls_are_marked_to_wait(tmp_path: Path, scripted_llm: Any) -> None:
    env = load_environment(tiny_environment_path())
    env = Environment(users=env.users[:1])
    script = RunScript(env.users[0])
    marks: dict[str, set[bool]] = collections.defaultdict(set)

    def recording(req: ChatRequest) -> str:
        marks[f"{req.role}:{req.tag}"].add(is_background_call())
        return script(req)

    llm = scripted_llm(recording)
    try:
        outcome = await Runner(env, resolve_agent("native"), tmp_path / "run", load_config("tiny"), llm).run()
    finally:
        await llm.aclose()
    assert outcome.metrics["complete"] and not outcome.failures
    assert dict(marks) == {"agent:agent.reply": {False}, "simulator:simulator.turn": {False},
                           "agent:agent.answer": {True}, "agent:eval.upper_bound": {True}}
    assert not is_background_call()  # the mark stays inside the tasks that set it
