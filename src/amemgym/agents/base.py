"""The MemoryAgent contract (docs/design.md §6): the assistant under test, with whatever memory it keeps.

An agent is built per user by a factory; the runner talks to it only through these methods.
Evaluation runs on a *copy* restored from a snapshot, so it can never change the agent that goes on
talking; ``answer`` must not change state either (the conformance checker verifies both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..llm.client import LLMClient

if TYPE_CHECKING:
    from .vector_store import VectorStore


@dataclass(frozen=True)
class AgentContext:
    """What a factory knows about the episode it builds an agent for.

    Attributes:
        user_id: the simulated user.
        seed: per-user seed for anything random the agent does.
        reply_max_tokens: budget of a conversational reply.
        eval_max_tokens: budget of an evaluation answer.
        context_window: the agent model's window in tokens.
        state_schema: the user's state variables; only oracle ablations may look at it.
        system_prompt: whether the native agent opens its requests with amemgym's system prompt (the
            original protocol sends none).
        store_factory: when set, the vector store the agent must keep its long-term memory in (the
            budget family's harness passes its metered store here; docs/budget.md, "Memory agents").
    """

    user_id: str
    seed: int = 0
    reply_max_tokens: int = 256
    eval_max_tokens: int = 96
    context_window: int = 16384
    state_schema: dict[str, list[str]] = field(default_factory=dict)
    system_prompt: bool = True
    store_factory: Callable[[], VectorStore] | None = None


@runtime_checkable
class MemoryAgent(Protocol):
    """An assistant with memory. All model calls go through the :class:`LLMClient` it was built with."""

    async def reply(self, message: str, *, time: str) -> str:
        """Answer one user message in the ongoing conversation, updating memory. ``time`` is simulated."""
        ...

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        """Record an exchange that happened elsewhere (off-policy replay), updating memory as ``reply`` would."""
        ...

    async def answer(self, prompt: str) -> str:
        """Answer an evaluation prompt from current memory, without changing any state."""
        ...

    async def snapshot(self) -> dict[str, Any]:
        """A JSON-ready snapshot of all state (waits for pending memory writes first)."""
        ...

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Replace all state with a snapshot taken by an agent of the same kind and settings."""
        ...

    def memory_view(self) -> str:
        """What the agent's memory holds, as text for people and judges."""
        ...

    def stats(self) -> dict[str, Any]:
        """Agent-specific counters (memory writes, dropped turns, retrieval time, memory size)."""
        ...


class AgentFactory(Protocol):
    """Builds one agent per user."""

    def __call__(self, llm: LLMClient, ctx: AgentContext) -> MemoryAgent:  # pragma: no cover - protocol
        ...


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters per token in English) for context budgeting."""
    return len(text) // 4 + 1
