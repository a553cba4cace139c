"""The mem0 adapter: real mem0ai (when installed) driven by the scripted fake through amemgym's client."""

from __future__ import annotations

import importlib.util
import json

import pytest

from amemgym.agents import AgentContext, resolve_agent
from amemgym.agents.checker import check_agent
from amemgym.llm.types import ChatRequest
from amemgym.testing.scripted_model import scripted_client

needs_mem0 = pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai not installed")


def mem0_script(req: ChatRequest) -> str:
    if req.tag != "memory.mem0":
        return "ok"
    if "Personal Information Organizer" in req.messages[0]["content"]:
        return json.dumps({"facts": ["User has a tiny kitchen"]})
    return json.dumps({"memory": [{"id": "0", "text": "User has a tiny kitchen", "event": "ADD"}]})


@needs_mem0
async def test_mem0_writes_with_simulated_time_and_round_trips() -> None:
    llm = scripted_client(mem0_script)
    agent = resolve_agent("mem0-5").build(llm, AgentContext("u1"))
    for i in range(3):
        await agent.reply(f"message {i}", time=f"2021-01-0{i + 1} 19:00")
    snap = json.loads(json.dumps(await agent.snapshot()))
    assert [i["payload"]["time"] for i in snap["memory"]["items"]] == ["2021-01-01 19:00"]
    assert agent.stats()["mem0_version"].startswith("1.")
    other = resolve_agent("mem0-5").build(llm, AgentContext("u1"))
    other.restore(snap)
    await other.answer("what do you know?")  # forces the rebuild of the mem0 store from the snapshot
    assert await other.snapshot() == snap
    assert "tiny kitchen" in llm.scripted.requests[-1].messages[0]["content"]


@needs_mem0
async def test_mem0_passes_the_conformance_checker() -> None:
    report = await check_agent(resolve_agent("mem0"))
    assert report.passed, report.lines()


async def test_missing_mem0_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from amemgym.errors import BackendUnavailable

    monkeypatch.setitem(sys.modules, "mem0", None)
    llm = scripted_client(mem0_script, roles=("agent",))
    from amemgym.agents.mem0_adapter import mem0_factory

    agent = mem0_factory(freq=2, ns=0)(llm, AgentContext("u1"))
    with pytest.raises(BackendUnavailable, match="amemgym\\[mem0\\]"):
        await agent.ingest("a", "b", time="2021-01-01 19:00")
        await agent.snapshot()
