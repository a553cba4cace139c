"""A plug-in memory agent behind the guard: every call watched, limited and checked (docs/design.md §6).

:meth:`AgentSpec.build <amemgym.agents.registry.AgentSpec.build>` wraps what a ``module:factory`` plug-in
builds in :class:`GuardedAgent`, so the runners of both families call plug-ins exactly as they call
built-ins and still get one line naming the agent and the call when it stalls, raises, exits or replies
with the wrong type.
"""

from __future__ import annotations

from typing import Any

from .base import MemoryAgent
from .guard import call_plugin, call_plugin_sync


class GuardedAgent:
    """A :class:`~amemgym.agents.base.MemoryAgent` that forwards to a plug-in through :mod:`.guard`."""

    def __init__(self, inner: MemoryAgent, name: str) -> None:
        self.inner, self.name = inner, name
        # Only offered when the plug-in has it: the budget family calls ``flush`` where it exists.
        if callable(getattr(inner, "flush", None)):
            self.flush = self._flush

    async def reply(self, message: str, *, time: str) -> str:
        """The plug-in's reply, which must be a string."""
        return await call_plugin(self.name, "reply", self.inner.reply, message, time=time, expect=str)  # type: ignore[no-any-return]

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        """Forward an exchange to record; whatever it returns is ignored."""
        await call_plugin(self.name, "ingest", self.inner.ingest, user, assistant, time=time)

    async def answer(self, prompt: str) -> str:
        """The plug-in's answer, which must be a string."""
        return await call_plugin(self.name, "answer", self.inner.answer, prompt, expect=str)  # type: ignore[no-any-return]

    async def snapshot(self) -> dict[str, Any]:
        """The plug-in's snapshot, which must be a dict."""
        return await call_plugin(self.name, "snapshot", self.inner.snapshot, expect=dict)  # type: ignore[no-any-return]

    async def _flush(self) -> None:
        await call_plugin(self.name, "flush", self.inner.flush)  # type: ignore[attr-defined]

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Restore the plug-in from a snapshot."""
        call_plugin_sync(self.name, "restore", self.inner.restore, snapshot)

    def memory_view(self) -> str:
        """The plug-in's memory as text, which must be a string."""
        return call_plugin_sync(self.name, "memory_view", self.inner.memory_view, expect=str)  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        """The plug-in's counters, which must be a dict."""
        return call_plugin_sync(self.name, "stats", self.inner.stats, expect=dict)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        # Anything outside the contract (an evolvable policy, a test's counters) is the plug-in's own.
        if name in _OWN:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)


_OWN = frozenset({"inner", "name", "flush"})
