"""Every built-in agent finishes a run on the fixture environment with the scripted fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client


def memory_writer(inner):
    """Wrap a run script so memory-role calls get well-formed JSON."""

    def respond(req: ChatRequest) -> str:
        if req.tag == "memory.extract":
            return json.dumps({"facts": ["The user mentioned something new."]})
        if req.tag == "memory.reconcile":
            return json.dumps({"actions": [{"op": "add", "id": None, "text": "Another fact."}]})
        if req.tag == "memory.awi_write":
            return json.dumps({"updates": {"situation": "described recently"}})
        return inner(req)

    return respond



def tiny_env_path(original_env_path: Path) -> list[Path]:
    paths = [original_env_path]
    try:
        from amemgym.families.statetrack.generate.procedural import tiny_environment_path
    except ImportError:
        return paths
    try:
        tiny = Path(tiny_environment_path())
    except Exception:  # noqa: BLE001 - the generator is optional here while it is being finished
        return paths
    return [*paths, tiny] if tiny.exists() else paths


@pytest.mark.parametrize("agent", ["native", "rag-2-4-30", "awe-2-4-30", "awi", "awi-oracle"])
async def test_agent_finishes_fixture_run(agent: str, original_env_path: Path, tmp_path: Path) -> None:
    for i, env_path in enumerate(tiny_env_path(original_env_path)):
        env = load_environment(env_path)
        llm = scripted_client(memory_writer(RunScript(env.users[0])), cache=tmp_path / str(i) / "cache.sqlite")
        outcome = await Runner(env, resolve_agent(agent), tmp_path / f"run{i}", load_config("tiny"), llm).run(
            user_ids=[env.users[0].id])
        # Only the first user was run: nothing of theirs may be missing or failed.
        assert not outcome.failures
        assert all(m["user"] != env.users[0].id for m in outcome.metrics["missing"])
        assert outcome.metrics["overall"]["overall"]["mean"] == 1.0
