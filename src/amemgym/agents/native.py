"""The native agent: the model sees the whole conversation; nothing else is remembered."""

from __future__ import annotations

from typing import Any

from ..llm.client import LLMClient
from ..llm.types import ChatMessage
from ..prompts import render
from .base import AgentContext, estimate_tokens


class NativeAgent:
    """Keeps every message in context; when the window is exceeded the oldest exchanges are dropped and counted.

    The original implementation let the request fail once the conversation outgrew the window; dropping
    whole exchanges from the front keeps the agent working and the count makes the loss visible.
    """

    kind = "native"

    def __init__(self, llm: LLMClient, ctx: AgentContext) -> None:
        self.llm = llm
        self.ctx = ctx
        self.system = render("agent_system") if ctx.system_prompt else ""
        self.history: list[ChatMessage] = []
        self.dropped_messages = 0

    def _window(self, extra: str, reserve: int) -> list[ChatMessage]:
        """System prompt (if any) + as much recent history as fits + the new message."""
        budget = self.ctx.context_window - reserve - estimate_tokens(self.system) - estimate_tokens(extra)
        kept: list[ChatMessage] = []
        used = 0
        for msg in reversed(self.history):
            cost = estimate_tokens(msg["content"]) + 4
            if used + cost > budget:
                break
            kept.append(msg)
            used += cost
        kept.reverse()
        # Never start the window on an assistant turn: the model would see a reply without its question.
        while kept and kept[0]["role"] == "assistant":
            kept.pop(0)
        head: list[ChatMessage] = [{"role": "system", "content": self.system}] if self.system else []
        return [*head, *kept, {"role": "user", "content": extra}]

    async def reply(self, message: str, *, time: str) -> str:
        """Reply with the full (windowed) history in context."""
        msgs = self._window(message, self.ctx.reply_max_tokens)
        kept = len(msgs) - 1 - (1 if self.system else 0)
        self.dropped_messages = max(self.dropped_messages, len(self.history) - kept)
        res = await self.llm.chat("agent", msgs, max_tokens=self.ctx.reply_max_tokens, tag="agent.reply",
                                  keep_empty=True)
        self.history += [{"role": "user", "content": message}, {"role": "assistant", "content": res.text}]
        return res.text

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        """Append a recorded exchange."""
        self.history += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]

    async def answer(self, prompt: str) -> str:
        """Answer from the conversation so far; history is not changed."""
        msgs = self._window(prompt, self.ctx.eval_max_tokens)
        res = await self.llm.chat("agent", msgs, max_tokens=self.ctx.eval_max_tokens, tag="agent.answer")
        return res.text

    async def snapshot(self) -> dict[str, Any]:
        """The conversation and the drop counter."""
        return {"kind": self.kind, "history": [dict(m) for m in self.history],
                "dropped_messages": self.dropped_messages}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot from :meth:`snapshot`."""
        self.history = [dict(m) for m in snapshot["history"]]
        self.dropped_messages = int(snapshot.get("dropped_messages", 0))

    def memory_view(self) -> str:
        """The native agent's memory is its transcript."""
        return f"(full conversation in context: {len(self.history)} messages, {self.dropped_messages} dropped)"

    def stats(self) -> dict[str, Any]:
        """Messages held and dropped."""
        return {"messages": len(self.history), "dropped_messages": self.dropped_messages,
                "context_tokens": sum(estimate_tokens(m["content"]) for m in self.history)}


def native(llm: LLMClient, ctx: AgentContext) -> NativeAgent:
    """Factory of the native agent."""
    return NativeAgent(llm, ctx)
