"""AWI agent: an LLM keeps an in-context dictionary of notes (type -> text), merged by dict union.

The write prompt has a separate, replaceable *policy* section saying what kinds of information to keep;
self-evolution (docs/design.md §7) rewrites exactly that text, and the oracle ablation fills it with the names of
the user's state variables.
"""

from __future__ import annotations

import json
from typing import Any

from ..llm.client import LLMClient
from ..prompts import render
from ..seeding import derive_seed
from .base import AgentContext
from .buffered import BufferedAgent, BufferedMessage, format_messages
from .structured import memory_json

WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"updates": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["updates"],
    "additionalProperties": False,
}


def default_policy() -> str:
    """Our default answer to "what kinds of information to keep"."""
    return render("agent_awi_policy").strip()


def oracle_policy(state_schema: dict[str, list[str]]) -> str:
    """A policy naming the user's state variables as the types to keep (ablation only)."""
    return render("agent_awi_oracle_policy", types="\n".join(f"- {name}" for name in state_schema)).strip()


def check_updates(value: Any) -> str | None:
    """Problem with a write reply, or None."""
    if not isinstance(value, dict) or not isinstance(value.get("updates"), dict):
        return "expected an object with an 'updates' object"
    return None


class AwiAgent(BufferedAgent):
    """Buffered agent whose whole memory is a small dictionary shown in the system prompt; no retrieval.

    Args:
        policy: what kinds of information to keep (the replaceable section of the write prompt).
        (other arguments as :class:`BufferedAgent`)
    """

    kind = "awi"

    def __init__(self, llm: LLMClient, ctx: AgentContext, *, policy: str | None = None, **kwargs: Any) -> None:
        super().__init__(llm, ctx, **kwargs)
        self.policy = policy if policy is not None else default_policy()
        self.notes: dict[str, str] = {}

    async def _write(self, batch: list[BufferedMessage]) -> None:
        prompt = render("agent_awi_write", policy=self.policy, time=batch[-1].time,
                        memory=json.dumps(self.notes, ensure_ascii=False, indent=1) if self.notes else "{}",
                        messages=format_messages(batch))
        got = await memory_json(self.llm, [{"role": "user", "content": prompt}], WRITE_SCHEMA, self.counters,
                                check=check_updates, tag="memory.awi_write",
                                seed=derive_seed(self.ctx.seed, self.kind, self.counters.writes))
        if got is None:
            return
        self.merge(got["updates"])

    def merge(self, updates: dict[str, Any]) -> None:
        """Dict union: new types are added, existing ones overwritten; non-text values are dropped and counted."""
        for key, text in updates.items():
            if not isinstance(text, str) or not str(key).strip():
                self.counters.dropped_items += 1
                continue
            self.notes[str(key).strip()] = text.strip()

    async def _memory_text(self, query: str) -> str:
        return "\n".join(f"- {k}: {v}" for k, v in self.notes.items())

    def _memory_state(self) -> dict[str, Any]:
        # The policy travels with the memory so a resumed self-evolution run continues from its latest text.
        return {"notes": dict(self.notes), "policy": self.policy}

    def _load_memory_state(self, state: dict[str, Any]) -> None:
        self.notes = {str(k): str(v) for k, v in state["notes"].items()}
        self.policy = str(state.get("policy", self.policy))

    def _memory_stats(self) -> dict[str, Any]:
        return {"memories": len(self.notes), "memory_chars": sum(len(k) + len(v) for k, v in self.notes.items()),
                "dropped_items": self.counters.dropped_items}

    def memory_view(self) -> str:
        """The notes dictionary as ``type: text`` lines."""
        return "\n".join(f"{k}: {v}" for k, v in self.notes.items()) or "(no notes)"
