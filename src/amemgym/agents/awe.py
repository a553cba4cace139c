"""AWE agent: an LLM extracts facts from messages leaving the window and reconciles them with similar memories.

The reconciliation follows the mem0 design the paper built on: for each new fact the most similar stored
memories are retrieved, and one call decides per memory and fact whether to add, update, delete or keep.
Stored ids are shown to the model as small integers (0, 1, ...) so it cannot garble long identifiers.
"""

from __future__ import annotations

import json
from typing import Any

from ..llm.client import LLMClient
from ..prompts import render
from ..seeding import derive_seed
from .base import AgentContext
from .buffered import BufferedMessage, format_messages
from .rag import RetrievingAgent
from .structured import memory_json
from .vector_store import MemoryRecord

OPS = ("add", "update", "delete", "keep")

EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
    "additionalProperties": False,
}

RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "actions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": list(OPS)},
                    "id": {"type": ["integer", "null"]},
                    "text": {"type": "string"},
                },
                "required": ["op", "id", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["actions"],
    "additionalProperties": False,
}


def check_facts(value: Any) -> str | None:
    """Problem with an extraction reply, or None."""
    if not isinstance(value, dict) or not isinstance(value.get("facts"), list):
        return "expected an object with a 'facts' list"
    if not all(isinstance(f, str) for f in value["facts"]):
        return "every fact must be a string"
    return None


def check_actions(value: Any, n_existing: int) -> str | None:
    """Problem with a reconciliation reply against ``n_existing`` numbered memories, or None."""
    if not isinstance(value, dict) or not isinstance(value.get("actions"), list):
        return "expected an object with an 'actions' list"
    used: set[int] = set()
    for act in value["actions"]:
        if not isinstance(act, dict) or act.get("op") not in OPS:
            return f"each action needs op in {OPS}"
        op, ident, text = act["op"], act.get("id"), act.get("text")
        if op in ("add", "update") and (not isinstance(text, str) or not text.strip()):
            return f"{op} needs a non-empty text"
        if op != "add":
            if not isinstance(ident, int) or isinstance(ident, bool) or not 0 <= ident < n_existing:
                return f"{op} needs an id between 0 and {n_existing - 1}"
            if ident in used:
                return f"memory {ident} has more than one action"
            used.add(ident)
    return None


class AweAgent(RetrievingAgent):
    """Extract facts, retrieve similar memories per fact, reconcile with add/update/delete/keep.

    Args:
        similar: memories retrieved per new fact for reconciliation.
        (other arguments as :class:`RetrievingAgent`)
    """

    kind = "awe"

    def __init__(self, llm: LLMClient, ctx: AgentContext, *, similar: int = 5, **kwargs: Any) -> None:
        super().__init__(llm, ctx, **kwargs)
        self.similar = similar
        self.decisions = {op: 0 for op in OPS}

    async def _write(self, batch: list[BufferedMessage]) -> None:
        seed = derive_seed(self.ctx.seed, self.kind, self.counters.writes)
        prompt = render("agent_awe_extract", time=batch[-1].time, messages=format_messages(batch))
        got = await memory_json(self.llm, [{"role": "user", "content": prompt}], EXTRACT_SCHEMA, self.counters,
                                check=check_facts, tag="memory.extract", seed=seed)
        if got is None:
            return
        facts = list(dict.fromkeys(f.strip() for f in got["facts"] if f.strip()))
        if not facts:
            return
        fact_vecs = await self.llm.embed(facts)
        related: dict[int, MemoryRecord] = {}
        for vec in fact_vecs:
            for hit in self.store.search(vec, self.similar):
                related[hit.record.id] = hit.record
        existing = sorted(related.values(), key=lambda r: (r.time, r.id))
        if not existing:
            # Nothing to reconcile against: every fact is new, and asking the model would only add cost.
            actions = [{"op": "add", "id": None, "text": f} for f in facts]
        else:
            prompt = render(
                "agent_awe_reconcile",
                memories="\n".join(json.dumps({"id": i, "time": r.time, "text": r.text}, ensure_ascii=False)
                                   for i, r in enumerate(existing)),
                facts="\n".join(f"- {f}" for f in facts),
                time=batch[-1].time,
            )
            decided = await memory_json(
                self.llm, [{"role": "user", "content": prompt}], RECONCILE_SCHEMA, self.counters,
                check=lambda v: check_actions(v, len(existing)), tag="memory.reconcile", seed=seed + 1,
            )
            if decided is None:
                self.counters.dropped_items += len(facts)
                return
            actions = decided["actions"]
        await self._apply(actions, existing, batch[-1].time)
        self._evict()

    async def _apply(self, actions: list[dict[str, Any]], existing: list[MemoryRecord], time: str) -> None:
        """Apply reconciliation decisions; new and rewritten memories carry the batch's simulated time."""
        texts = [a["text"].strip() for a in actions if a["op"] in ("add", "update")]
        vecs = iter(await self.llm.embed(texts)) if texts else iter(())
        for act in actions:
            self.decisions[act["op"]] += 1
            if act["op"] == "add":
                self.store.add(act["text"].strip(), time, "fact", next(vecs))
            elif act["op"] == "update":
                self.store.update(existing[act["id"]].id, act["text"].strip(), time, next(vecs))
            elif act["op"] == "delete":
                self.store.delete(existing[act["id"]].id)

    def _memory_state(self) -> dict[str, Any]:
        return {**super()._memory_state(), "decisions": dict(self.decisions)}

    def _load_memory_state(self, state: dict[str, Any]) -> None:
        super()._load_memory_state(state)
        self.decisions = {op: int(state.get("decisions", {}).get(op, 0)) for op in OPS}

    def _memory_stats(self) -> dict[str, Any]:
        return {**super()._memory_stats(), "dropped_facts": self.counters.dropped_items,
                **{f"decisions_{op}": n for op, n in self.decisions.items()}}
