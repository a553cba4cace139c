"""Memory-agent plug-ins for the budget family's tests, some of them misbehaving on purpose."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from amemgym.agents.base import AgentContext
from amemgym.llm.client import LLMClient

DIM = 256  # HashEmbedder's


class StoreAgent:
    """Keeps its memory in the store from ``ctx.store_factory``: ``adds`` memories per reply (a line each of
    the message), an update of its first memory on a correction notice or a one-document event (a later
    report on an entity: nothing marks a silent contradiction, so every re-report is treated as one), no
    answers."""

    adds = 1

    def __init__(self, llm: LLMClient, ctx: AgentContext) -> None:
        assert ctx.store_factory is not None
        self.llm, self.store = llm, ctx.store_factory()
        self.attempts = 0

    async def reply(self, message: str, *, time: str) -> str:
        lines = [line for line in message.splitlines() if line.strip()]
        first = next((r.id for r in self.store.records()), None)
        again = re.search(r"^1 \w[\w ]* document\.$", message, re.M) is not None
        if first is not None and ("Correction notice" in message or again):
            self.store.update(first, lines[-1], time, np.ones(DIM, dtype=np.float32) / 16)
            return "updated"
        for i in range(self.adds):
            self.attempts += 1
            self.store.add(lines[min(i + 1, len(lines) - 1)], time, "fact", np.ones(DIM, dtype=np.float32) / 16)
        return "stored"

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        await self.reply(user, time=time)

    async def answer(self, prompt: str) -> str:
        return "I don't know"

    async def snapshot(self) -> dict[str, Any]:
        return {"store": self.store.snapshot()}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.store.restore(snapshot["store"])

    def memory_view(self) -> str:
        return "\n".join(r.text for r in self.store.records())

    def stats(self) -> dict[str, Any]:
        return {"memories": len(self.store)}


class Greedy(StoreAgent):
    """Tries to add 150 memories per event: ten times the lite budget, every event."""

    adds = 150


class AroundTheMeter(StoreAgent):
    """Writes straight into the store's inner matrix, past the metered calls."""

    async def reply(self, message: str, *, time: str) -> str:
        self.store._inner.add(message[:50], time, "fact", np.ones(DIM, dtype=np.float32) / 16)  # type: ignore[attr-defined]
        return "stored"


class SelfLoader(StoreAgent):
    """Tries to load memories into the store with ``restore``."""

    async def reply(self, message: str, *, time: str) -> str:
        self.store.restore({"metered_memories": {"next_id": 0, "records": [], "dim": 0, "vectors": ""},
                            "phantoms": 0})
        return "loaded"


class Hoarder(StoreAgent):
    """Metered store, but it also keeps every message in its own list (and in its snapshot)."""

    def __init__(self, llm: LLMClient, ctx: AgentContext) -> None:
        super().__init__(llm, ctx)
        self.seen: list[str] = []

    async def reply(self, message: str, *, time: str) -> str:
        self.seen.append(message)
        return await super().reply(message, time=time)

    async def snapshot(self) -> dict[str, Any]:
        return {"store": self.store.snapshot(), "seen": list(self.seen)}

    def restore(self, snapshot: dict[str, Any]) -> None:
        super().restore(snapshot)
        self.seen = list(snapshot["seen"])


class AnswerWriter(StoreAgent):
    """Writes a memory while answering a question."""

    async def answer(self, prompt: str) -> str:
        self.store.add("written while answering", "x", "fact", np.ones(DIM, dtype=np.float32) / 16)
        return "I don't know"


class ListKeeper:
    """Keeps memory in its own list and never builds the harness's store."""

    def __init__(self, llm: LLMClient, ctx: AgentContext) -> None:
        self.memory: list[str] = []

    async def reply(self, message: str, *, time: str) -> str:
        self.memory.append(message)
        return "ok"

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        self.memory.append(user)

    async def answer(self, prompt: str) -> str:
        return "I don't know"

    async def snapshot(self) -> dict[str, Any]:
        return {"memory": list(self.memory)}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.memory = list(snapshot["memory"])

    def memory_view(self) -> str:
        return "\n".join(self.memory)

    def stats(self) -> dict[str, Any]:
        return {}


def store_agent(llm: LLMClient, ctx: AgentContext) -> StoreAgent:
    return StoreAgent(llm, ctx)


def greedy(llm: LLMClient, ctx: AgentContext) -> Greedy:
    return Greedy(llm, ctx)


def around_the_meter(llm: LLMClient, ctx: AgentContext) -> AroundTheMeter:
    return AroundTheMeter(llm, ctx)


def self_loader(llm: LLMClient, ctx: AgentContext) -> SelfLoader:
    return SelfLoader(llm, ctx)


def hoarder(llm: LLMClient, ctx: AgentContext) -> Hoarder:
    return Hoarder(llm, ctx)


def answer_writer(llm: LLMClient, ctx: AgentContext) -> AnswerWriter:
    return AnswerWriter(llm, ctx)


def list_keeper(llm: LLMClient, ctx: AgentContext) -> ListKeeper:
    return ListKeeper(llm, ctx)


class Buggy(StoreAgent):
    """Its reply has a bug."""

    async def reply(self, message: str, *, time: str) -> str:
        raise ValueError("off by one")


def buggy(llm: LLMClient, ctx: AgentContext) -> Buggy:
    return Buggy(llm, ctx)
