"""Buffer arithmetic, AWE reconciliation, AWI merge, retrieval order and snapshots of the built-in agents."""

from __future__ import annotations

import json

import numpy as np
import pytest

from amemgym.agents import AgentContext, resolve_agent
from amemgym.agents.buffered import MessageBuffer
from amemgym.agents.vector_store import NumpyVectorStore
from amemgym.errors import ConfigError
from amemgym.llm.types import ChatRequest
from amemgym.testing.scripted_model import HashEmbedder, last_user, scripted_client

CTX = AgentContext(user_id="u1", seed=3, state_schema={"kitchen": ["tiny", "full"], "shift": ["days", "nights"]})


def echo(req: ChatRequest) -> str:
    return f"re: {last_user(req)}"


def test_buffer_writes_oldest_freq_once_freq_plus_ns_are_held() -> None:
    buf = MessageBuffer(freq=2, ns=4)
    assert buf.push("u1", "a1", "t1") == [] and buf.push("u2", "a2", "t2") == []
    (batch,) = buf.push("u3", "a3", "t3")
    assert [m.content for m in batch] == ["u1", "a1"]
    assert [m.content for m in buf.messages] == ["u2", "a2", "u3", "a3"]


def test_buffer_with_odd_freq_splits_exchanges() -> None:
    buf = MessageBuffer(freq=3, ns=1)
    assert buf.push("u1", "a1", "t") == []
    (batch,) = buf.push("u2", "a2", "t")
    assert [m.content for m in batch] == ["u1", "a1", "u2"] and [m.content for m in buf.messages] == ["a2"]


async def test_rag_context_and_written_messages_after_each_exchange() -> None:
    llm = scripted_client(echo)
    agent = resolve_agent("rag-2-2-5").build(llm, CTX)
    for i in range(3):
        await agent.reply(f"message {i}", time=f"2021-01-0{i + 1} 19:00")
    snap = await agent.snapshot()
    assert [m["content"] for m in snap["buffer"]] == ["message 2", "re: message 2"]
    assert [(r["text"], r["kind"]) for r in snap["memory"]["store"]["records"]] == [
        ("message 0", "user"), ("re: message 0", "assistant"), ("message 1", "user"), ("re: message 1", "assistant")]
    last = llm.scripted.requests[-1]
    assert [m["content"] for m in last.messages[1:]] == ["message 1", "re: message 1", "message 2"]
    assert "message 0" in last.messages[0]["content"]


async def test_retrieved_memories_are_shown_in_simulated_time_order() -> None:
    llm = scripted_client(echo)
    agent = resolve_agent("rag-2-0-10").build(llm, CTX)
    # Later simulated times first: insertion order and time order disagree on purpose.
    for t in ("2021-03-01 19:00", "2021-01-01 19:00", "2021-02-01 19:00"):
        await agent.ingest(f"user at {t}", "ok", time=t)
    await agent.answer("anything")
    system = llm.scripted.requests[-1].messages[0]["content"]
    positions = [system.index(f"user at {t}") for t in ("2021-01-01 19:00", "2021-02-01 19:00", "2021-03-01 19:00")]
    assert positions == sorted(positions)


def awe_script(actions: list[dict]) -> object:
    def respond(req: ChatRequest) -> str:
        if req.tag == "memory.extract":
            return json.dumps({"facts": [f"fact from: {last_user(req).splitlines()[-2][:40]}"]})
        if req.tag == "memory.reconcile":
            return json.dumps({"actions": actions})
        return "ok"

    return respond


async def test_awe_reconciliation_applies_update_delete_keep_add() -> None:
    llm = scripted_client(awe_script([]))
    agent = resolve_agent("awe-2-0-10").build(llm, CTX)
    vec = HashEmbedder().embed_sync(["x"])[0]
    for text in ("lives alone", "works days", "has a tiny kitchen"):
        agent.store.add(text, "2021-01-01 19:00", "fact", vec)
    agent.llm = scripted_client(awe_script([
        {"op": "update", "id": 1, "text": "works nights now"}, {"op": "delete", "id": 2, "text": ""},
        {"op": "keep", "id": 0, "text": ""}, {"op": "add", "id": None, "text": "trains for a half marathon"}]))
    await agent.ingest("my news", "noted", time="2021-04-01 20:00")
    snap = await agent.snapshot()
    got = {r["text"]: r["time"] for r in snap["memory"]["store"]["records"]}
    assert got == {"lives alone": "2021-01-01 19:00", "works nights now": "2021-04-01 20:00",
                   "trains for a half marathon": "2021-04-01 20:00"}
    assert snap["memory"]["decisions"] == {"add": 1, "update": 1, "delete": 1, "keep": 1}


async def test_awe_adds_directly_when_memory_is_empty_and_counts_dropped_facts() -> None:
    llm = scripted_client(awe_script([{"op": "update", "id": 99, "text": "bad id"}]))
    agent = resolve_agent("awe-2-0-10").build(llm, CTX)
    await agent.ingest("first", "ok", time="2021-01-01 19:00")
    await agent.snapshot()  # waits for the background write
    assert not any(r.tag == "memory.reconcile" for r in llm.scripted.requests)
    await agent.ingest("second", "ok", time="2021-01-02 19:00")
    await agent.snapshot()
    stats = agent.stats()
    assert stats["memories"] == 1 and stats["dropped_facts"] == 1 and stats["malformed_replies"] == 1


async def test_awi_merges_by_dict_union() -> None:
    replies = iter([{"updates": {"home": "small flat", "work": "day shifts"}},
                    {"updates": {"work": "night shifts", "sport": "half marathon", "bad": 3}}])
    llm = scripted_client(lambda req: json.dumps(next(replies)) if req.tag == "memory.awi_write" else "ok")
    agent = resolve_agent("awi-2-0").build(llm, CTX)
    await agent.ingest("a", "b", time="2021-01-01 19:00")
    await agent.ingest("c", "d", time="2021-02-01 19:00")
    await agent.snapshot()
    assert agent.notes == {"home": "small flat", "work": "night shifts", "sport": "half marathon"}
    assert agent.stats()["dropped_items"] == 1


async def test_awi_policy_section_is_replaceable_and_oracle_names_the_schema() -> None:
    seen: list[str] = []
    llm = scripted_client(lambda req: (seen.append(last_user(req)), '{"updates": {}}')[1])
    for name in ("awi-2-0", "awi-oracle-2-0"):
        agent = resolve_agent(name).build(llm, CTX)
        await agent.ingest("a", "b", time="t")
        await agent.snapshot()
    assert "- kitchen\n- shift" in seen[1] and "- kitchen" not in seen[0]


async def test_snapshot_round_trip_is_exact_for_every_buffered_agent() -> None:
    for name in ("rag-2-2-3", "awe-2-2-3", "awi-2-2"):
        llm = scripted_client(awe_script([{"op": "add", "id": None, "text": "new"}]) if name.startswith("awe") else
                        (lambda req: '{"updates": {"k": "v"}}' if req.tag == "memory.awi_write" else "ok"))
        agent = resolve_agent(name).build(llm, CTX)
        for i in range(4):
            await agent.reply(f"m{i}", time=f"2021-01-0{i + 1} 19:00")
        snap = json.loads(json.dumps(await agent.snapshot()))
        other = resolve_agent(name).build(llm, CTX)
        other.restore(snap)
        assert await other.snapshot() == snap


def test_vector_store_ties_go_to_the_older_memory_and_snapshot_is_bit_exact() -> None:
    store = NumpyVectorStore()
    v = np.ones(4, dtype=np.float32) / 2
    for i in range(5):
        store.add(f"m{i}", "t", "fact", v)
    store.delete(1)
    assert [h.record.id for h in store.search(v, 3)] == [0, 2, 3]
    copy = NumpyVectorStore()
    copy.restore(json.loads(json.dumps(store.snapshot())))
    assert copy.snapshot() == store.snapshot() and copy.add("n", "t", "fact", v) == 5


def test_agent_names_and_options() -> None:
    assert resolve_agent("awe").factory.args[0].topk == 30
    assert resolve_agent("rag-1-8-10").factory.args[0].ns == 8
    with pytest.raises(ConfigError):
        resolve_agent("rag-0-4-30")
