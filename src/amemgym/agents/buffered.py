"""The message buffer shared by RAG, AWE and AWI, and the agent skeleton built around it (docs/design.md §6).

The buffer is counted in messages: once it holds ``freq + ns`` of them, the oldest ``freq`` go to
long-term memory and ``ns`` stay in context. Subclasses decide what "going to memory" means
(:meth:`BufferedAgent._write`) and what memory shows up in the system prompt
(:meth:`BufferedAgent._memory_text`).
"""

from __future__ import annotations

import asyncio
import time as wallclock
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import AgentError
from ..llm.client import LLMClient
from ..llm.types import ChatMessage
from ..prompts import render
from .base import AgentContext


@dataclass(frozen=True)
class BufferedMessage:
    """A message waiting in the local window, with the simulated time of its session."""

    role: str
    content: str
    time: str


class MessageBuffer:
    """The local window: exchanges come in, batches of ``freq`` oldest messages come out.

    Args:
        freq: messages written to memory at a time.
        ns: messages that stay in context after a write.
    """

    def __init__(self, freq: int, ns: int) -> None:
        if freq < 1 or ns < 0:
            raise AgentError(f"buffer needs freq >= 1 and ns >= 0, got freq={freq}, ns={ns}")
        self.freq = freq
        self.ns = ns
        self.messages: list[BufferedMessage] = []

    def push(self, user: str, assistant: str, time: str) -> list[list[BufferedMessage]]:
        """Add one exchange; return the batches (oldest first) that must now be written to memory."""
        self.messages += [BufferedMessage("user", user, time), BufferedMessage("assistant", assistant, time)]
        batches: list[list[BufferedMessage]] = []
        while len(self.messages) >= self.freq + self.ns:
            batches.append(self.messages[: self.freq])
            self.messages = self.messages[self.freq :]
        return batches

    def as_chat(self) -> list[ChatMessage]:
        """The window as chat messages."""
        return [{"role": m.role, "content": m.content} for m in self.messages]


@dataclass
class WriteCounters:
    """What memory writing cost and lost; persisted with the snapshot so resumed runs keep counting."""

    writes: int = 0
    messages_written: int = 0
    memory_calls: int = 0
    memory_prompt_tokens: int = 0
    memory_completion_tokens: int = 0
    malformed_replies: int = 0
    dropped_items: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteCounters:
        """Load counters, ignoring unknown keys from other versions."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in data.items() if k in names})


def format_messages(batch: list[BufferedMessage]) -> str:
    """A batch as ``[time] user: ...`` lines for memory-writing prompts."""
    return "\n".join(f"[{m.time}] {m.role}: {m.content}" for m in batch)


class BufferedAgent:
    """Skeleton of a buffered memory agent: reply with memory in the system prompt, write in the background.

    Writes overlap the next model call: after a reply is produced the batch that left the window is
    written in a background task, so it runs while the user simulator writes the next message. Every
    method that reads or exports memory (``reply``, ``ingest``, ``answer``, ``snapshot``) first awaits
    that task. This is safe because a write only reads messages already exchanged, and retrieval for the
    next message happens only after the write has finished, so the outcome equals a sequential run.

    Args:
        llm: the client (roles ``agent`` for replies and ``memory`` for writes).
        ctx: episode context.
        freq: messages written per batch.
        ns: messages kept in context.
        overlap: write in the background (True) or inline (False, for debugging).
    """

    kind = "buffered"

    def __init__(self, llm: LLMClient, ctx: AgentContext, *, freq: int, ns: int, overlap: bool = True) -> None:
        self.llm = llm
        self.ctx = ctx
        self.buffer = MessageBuffer(freq, ns)
        self.overlap = overlap
        self.counters = WriteCounters()
        self.retrieval_seconds = 0.0
        self._pending: asyncio.Task[None] | None = None
        self._base_system = render("agent_system")

    # ---- hooks for subclasses ----------------------------------------------------------------------
    async def _write(self, batch: list[BufferedMessage]) -> None:
        """Move one batch of messages into long-term memory."""
        raise NotImplementedError

    async def _memory_text(self, query: str) -> str:
        """The memory shown in the system prompt for ``query`` (one item per line, oldest first)."""
        raise NotImplementedError

    def _memory_state(self) -> dict[str, Any]:
        """JSON-ready long-term memory."""
        raise NotImplementedError

    def _load_memory_state(self, state: dict[str, Any]) -> None:
        """Restore long-term memory from :meth:`_memory_state` output."""
        raise NotImplementedError

    def _memory_stats(self) -> dict[str, Any]:
        """Size of long-term memory."""
        raise NotImplementedError

    # ---- the MemoryAgent contract --------------------------------------------------------------------
    async def _settle(self) -> None:
        task, self._pending = self._pending, None
        if task is not None:
            await task

    async def _write_batches(self, batches: list[list[BufferedMessage]]) -> None:
        for batch in batches:
            await self._write(batch)
            self.counters.writes += 1
            self.counters.messages_written += len(batch)

    async def _after_exchange(self, user: str, assistant: str, time: str) -> None:
        batches = self.buffer.push(user, assistant, time)
        if not batches:
            return
        if self.overlap:
            self._pending = asyncio.create_task(self._write_batches(batches))
        else:
            await self._write_batches(batches)

    async def _messages(self, text: str) -> list[ChatMessage]:
        start = wallclock.perf_counter()
        memory = await self._memory_text(text)
        self.retrieval_seconds += wallclock.perf_counter() - start
        system = self._base_system + "\n" + render("agent_memory_system", memories=memory or "(nothing yet)")
        return [{"role": "system", "content": system}, *self.buffer.as_chat(), {"role": "user", "content": text}]

    async def reply(self, message: str, *, time: str) -> str:
        """Reply with retrieved memory and the local window in context, then schedule the memory write."""
        await self._settle()
        msgs = await self._messages(message)
        res = await self.llm.chat("agent", msgs, max_tokens=self.ctx.reply_max_tokens, tag="agent.reply",
                                  keep_empty=True)
        await self._after_exchange(message, res.text, time)
        return res.text

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        """Take a recorded exchange into the window (and memory) exactly as :meth:`reply` would."""
        await self._settle()
        await self._after_exchange(user, assistant, time)

    async def flush(self) -> None:
        """End the conversation: write the whole window to long-term memory (``freq`` messages at a time, the
        last batch possibly shorter) and empty it. Optional in the contract; the budget family calls it after
        every event (docs/budget.md, "Memory agents")."""
        await self._settle()
        pending, self.buffer.messages = self.buffer.messages, []
        step = self.buffer.freq
        await self._write_batches([pending[i : i + step] for i in range(0, len(pending), step)])

    async def answer(self, prompt: str) -> str:
        """Answer from memory and the window; nothing is written."""
        await self._settle()
        msgs = await self._messages(prompt)
        res = await self.llm.chat("agent", msgs, max_tokens=self.ctx.eval_max_tokens, tag="agent.answer")
        return res.text

    async def snapshot(self) -> dict[str, Any]:
        """Window, counters and long-term memory, after any pending write has finished."""
        await self._settle()
        return {
            "kind": self.kind,
            "freq": self.buffer.freq,
            "ns": self.buffer.ns,
            "buffer": [asdict(m) for m in self.buffer.messages],
            "counters": asdict(self.counters),
            "memory": self._memory_state(),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot taken by an agent of the same kind."""
        if snapshot.get("kind") != self.kind:
            raise AgentError(f"cannot restore a {snapshot.get('kind')!r} snapshot into a {self.kind!r} agent")
        try:
            self.buffer.messages = [BufferedMessage(**m) for m in snapshot["buffer"]]
            self.counters = WriteCounters.from_dict(snapshot["counters"])
            self._load_memory_state(snapshot["memory"])
        except (KeyError, TypeError) as exc:
            raise AgentError(f"{self.kind} snapshot is malformed: {exc}") from None
        self._pending = None

    def stats(self) -> dict[str, Any]:
        """Write counters, memory size and retrieval time (the time counts since this object was built)."""
        return {**asdict(self.counters), **self._memory_stats(), "window_messages": len(self.buffer.messages),
                "retrieval_seconds": round(self.retrieval_seconds, 6)}
