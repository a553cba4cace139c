"""RAG agent: raw messages that leave the window are embedded and stored; replies retrieve the top-k."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..llm.client import LLMClient
from .base import AgentContext
from .buffered import BufferedAgent, BufferedMessage
from .vector_store import MemoryRecord, NumpyVectorStore, VectorStore

#: How each stored kind is introduced in the system prompt.
KIND_LABELS = {"user": "the user said", "assistant": "you replied", "fact": "noted"}


def memory_lines(records: list[MemoryRecord]) -> str:
    """Memories ordered by simulated time (then id), one per line."""
    ordered = sorted(records, key=lambda r: (r.time, r.id))
    return "\n".join(f"- [{r.time}] {KIND_LABELS.get(r.kind, r.kind)}: {r.text}" for r in ordered)


class RetrievingAgent(BufferedAgent):
    """A buffered agent whose long-term memory is a vector store searched with the incoming message.

    Args:
        topk: memories shown per reply.
        max_memories: when set, the oldest memories are evicted past this many (counted).
        store_factory: builds the vector store; by default the context's ``store_factory`` when it has one,
            else an in-process exact store.
    """

    kind = "retrieving"

    def __init__(
        self,
        llm: LLMClient,
        ctx: AgentContext,
        *,
        freq: int,
        ns: int,
        topk: int,
        max_memories: int | None = None,
        overlap: bool = True,
        store_factory: Callable[[], VectorStore] | None = None,
    ) -> None:
        super().__init__(llm, ctx, freq=freq, ns=ns, overlap=overlap)
        self.topk = topk
        self.max_memories = max_memories
        self.store = (store_factory or ctx.store_factory or NumpyVectorStore)()
        self.evicted = 0

    async def _memory_text(self, query: str) -> str:
        if len(self.store) == 0:
            return ""
        vec = (await self.llm.embed([query]))[0]
        return memory_lines([h.record for h in self.store.search(vec, self.topk)])

    def _evict(self) -> None:
        if self.max_memories is None:
            return
        records = self.store.records()
        for rec in sorted(records, key=lambda r: (r.time, r.id))[: max(0, len(records) - self.max_memories)]:
            self.store.delete(rec.id)
            self.evicted += 1

    def _memory_state(self) -> dict[str, Any]:
        return {"store": self.store.snapshot(), "evicted": self.evicted}

    def _load_memory_state(self, state: dict[str, Any]) -> None:
        self.store.restore(state["store"])
        self.evicted = int(state.get("evicted", 0))

    def _memory_stats(self) -> dict[str, Any]:
        records = self.store.records()
        return {"memories": len(records), "memory_chars": sum(len(r.text) for r in records), "evicted": self.evicted}

    def memory_view(self) -> str:
        """Every stored memory ordered by simulated time."""
        return memory_lines(self.store.records()) or "(no memories)"


class RagAgent(RetrievingAgent):
    """Stores each message verbatim, tagged as user input or assistant response."""

    kind = "rag"

    async def _write(self, batch: list[BufferedMessage]) -> None:
        vecs = await self.llm.embed([m.content for m in batch])
        for m, vec in zip(batch, vecs, strict=True):
            self.store.add(m.content, m.time, m.role, vec)
        self._evict()
