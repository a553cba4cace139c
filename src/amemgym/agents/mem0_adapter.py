"""The real mem0 library (``mem0ai``, optional extra ``mem0``) as a buffered memory agent.

mem0's ``Memory`` runs in a worker thread; its model and embedding calls are routed back through
amemgym's :class:`LLMClient` (role ``memory`` for its writes, the embedder role for vectors), so it uses
whatever endpoint the run uses (an OpenAI-compatible server or the embedded llama.cpp model), shares the
response cache and is counted per role. Traps this adapter handles:

* Versions: mem0 2.x made the open-source write step add-only (no update/delete reconciliation), which
  is not the design the paper evaluated, so the extra pins ``mem0ai>=1.0,<2``; the version in use is
  reported in :meth:`Mem0Agent.stats`.
* Telemetry is on unless ``MEM0_TELEMETRY`` is false before mem0 is imported, and importing mem0
  writes a config file under ``MEM0_DIR`` (``~/.mem0`` by default): both are set, if unset, right before
  the lazy import (under amemgym's cache folder), and telemetry is switched off in the loaded module too
  unless the user set ``MEM0_TELEMETRY=true`` explicitly.
* Qdrant's local on-disk mode locks its folder to one process, so each agent (one per user and run) gets
  its own in-memory Qdrant client; persistence is amemgym's snapshot (texts, payloads, vectors).
* mem0 logs and skips a fact-extraction or update reply whose JSON does not parse; the bridge parses
  every JSON-mode reply itself and counts those that would be dropped (``malformed_replies``).

mem0 assigns random UUIDs and wall-clock ``updated_at`` stamps; the snapshot leaves both out (memories
are listed in a canonical order and get fresh ids on restore) so that snapshots stay deterministic.
"""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from importlib import metadata as importlib_metadata
from typing import Any

import numpy as np

from ..errors import AgentError, BackendUnavailable
from ..llm.client import LLMClient, default_cache_dir
from ..llm.parsing import parse_json_reply
from .base import AgentContext, AgentFactory
from .buffered import BufferedAgent, BufferedMessage
from .rag import KIND_LABELS

INSTALL_HINT = "the mem0 agent needs the optional extra: pip install 'amemgym[mem0]' (mem0ai>=1.0,<2)"
COLLECTION = "amemgym"
KEPT_PAYLOAD = ("data", "hash", "time", "created_at", "role", "user_id")


def _import_mem0() -> Any:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(default_cache_dir() / "mem0"))
    try:
        from mem0 import Memory
    except ImportError:
        raise BackendUnavailable(INSTALL_HINT) from None
    if os.environ["MEM0_TELEMETRY"].strip().lower() not in ("true", "1", "yes"):
        # mem0 reads the flag once at import; if something imported it before us, switch it off here too.
        from mem0.memory import main as mem0_main
        from mem0.memory import telemetry

        telemetry.MEM0_TELEMETRY = mem0_main.MEM0_TELEMETRY = False
        if telemetry.client_telemetry.posthog is not None:
            telemetry.client_telemetry.close()
    version = importlib_metadata.version("mem0ai")
    if not version.startswith("1."):
        raise BackendUnavailable(f"mem0ai {version} is installed; its add-only write step is not the evaluated "
                                 f"design. {INSTALL_HINT}")
    return Memory


class _Bridge:
    """mem0's LLM and embedder interfaces, served by amemgym's async client from mem0's worker thread."""

    def __init__(self, agent: Mem0Agent, loop: asyncio.AbstractEventLoop) -> None:
        self.agent = agent
        self.loop = loop

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def generate_response(self, messages: list[dict[str, str]], response_format: Any = None, **_: Any) -> str:
        """mem0's LLM call."""
        counters = self.agent.counters
        res = self._run(self.agent.llm.chat("memory", [{"role": m["role"], "content": m["content"]} for m in messages],
                                            temperature=0.0, tag="memory.mem0"))
        counters.memory_calls += 1
        counters.memory_prompt_tokens += res.prompt_tokens
        counters.memory_completion_tokens += res.completion_tokens
        if response_format and parse_json_reply(res.text) is None:
            counters.malformed_replies += 1  # mem0 will log and drop what this reply carried
        return res.text

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """mem0's embedding call."""
        return [float(x) for x in self._run(self.agent.llm.embed([text]))[0]]


class Mem0Agent(BufferedAgent):
    """Messages leaving the window go to ``mem0.Memory.add``; replies show ``Memory.search`` results by time.

    Args:
        topk: memories retrieved per reply.
        (other arguments as :class:`BufferedAgent`)
    """

    kind = "mem0"

    def __init__(self, llm: LLMClient, ctx: AgentContext, *, topk: int = 30, **kwargs: Any) -> None:
        super().__init__(llm, ctx, **kwargs)
        self.topk = topk
        self._memory: Any = None
        self._dim = 0
        self._restored: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()

    async def _ensure(self) -> Any:
        async with self._lock:
            if self._memory is None:
                memory_cls = _import_mem0()
                self._dim = int((await self.llm.embed(["dimension probe"])).shape[1])
                self._memory = await asyncio.to_thread(self._build, memory_cls, asyncio.get_running_loop())
                if self._restored:
                    await asyncio.to_thread(self._insert, self._restored)
        return self._memory

    def _build(self, memory_cls: Any, loop: asyncio.AbstractEventLoop) -> Any:
        from qdrant_client import QdrantClient

        config = {
            # Placeholders only: the bridge replaces mem0's own clients before any call is made.
            "llm": {"provider": "openai", "config": {"model": "amemgym-bridge", "api_key": "unused"}},
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": self._dim}},
            "vector_store": {"provider": "qdrant", "config": {
                "client": QdrantClient(":memory:"), "collection_name": COLLECTION, "embedding_model_dims": self._dim}},
            "history_db_path": ":memory:",
        }
        memory = memory_cls.from_config(config)
        bridge = _Bridge(self, loop)
        memory.llm = bridge
        memory.embedding_model = bridge
        return memory

    def _insert(self, items: list[dict[str, Any]]) -> None:
        vectors = [np.frombuffer(base64.b64decode(i["vector"]), dtype="<f4").tolist() for i in items]
        ids = [str(uuid.UUID(int=n + 1)) for n in range(len(items))]
        self._memory.vector_store.insert(vectors=vectors, ids=ids, payloads=[dict(i["payload"]) for i in items])

    def _export(self) -> list[dict[str, Any]]:
        if self._memory is None:
            return list(self._restored)
        client = self._memory.vector_store.client
        points, offset = [], None
        while True:
            batch, offset = client.scroll(COLLECTION, limit=256, offset=offset, with_payload=True, with_vectors=True)
            points += batch
            if offset is None:
                break
        items: list[dict[str, Any]] = [{"payload": {k: p.payload[k] for k in KEPT_PAYLOAD if k in p.payload},
                  "vector": base64.b64encode(np.asarray(p.vector, dtype="<f4").tobytes()).decode("ascii")}
                 for p in points]
        items.sort(key=lambda i: (str(i["payload"].get("time", "")), str(i["payload"].get("data", ""))))
        return items

    async def _write(self, batch: list[BufferedMessage]) -> None:
        memory = await self._ensure()
        messages = [{"role": m.role, "content": m.content} for m in batch]
        meta = {"time": batch[-1].time, "created_at": batch[-1].time}
        await asyncio.to_thread(memory.add, messages, user_id=self.ctx.user_id, metadata=meta)

    async def _memory_text(self, query: str) -> str:
        if self._memory is None and not self._restored:
            return ""
        memory = await self._ensure()
        found = await asyncio.to_thread(memory.search, query, user_id=self.ctx.user_id, limit=self.topk)
        rows = found.get("results", []) if isinstance(found, dict) else found
        rows = sorted(rows, key=lambda r: (str((r.get("metadata") or {}).get("time", r.get("created_at", ""))),
                                           str(r.get("memory", ""))))
        label = KIND_LABELS["fact"]
        return "\n".join(f"- [{(r.get('metadata') or {}).get('time', '?')}] {label}: {r.get('memory', '')}"
                         for r in rows)

    def _memory_state(self) -> dict[str, Any]:
        return {"items": self._export()}

    def _load_memory_state(self, state: dict[str, Any]) -> None:
        if self._memory is not None:
            raise AgentError("restore a mem0 agent before it is used")
        self._restored = [dict(i) for i in state["items"]]

    def _memory_stats(self) -> dict[str, Any]:
        items = self._export()
        try:
            version = importlib_metadata.version("mem0ai")
        except importlib_metadata.PackageNotFoundError:
            version = None
        return {"memories": len(items), "memory_chars": sum(len(str(i["payload"].get("data", ""))) for i in items),
                "dropped_replies": self.counters.malformed_replies, "mem0_version": version}

    def memory_view(self) -> str:
        """Stored mem0 memories in simulated-time order."""
        return "\n".join(f"- [{i['payload'].get('time', '?')}] {i['payload'].get('data', '')}"
                         for i in self._export()) or "(no memories)"


def mem0_factory(*, freq: int | str = 2, ns: int | str = 4, topk: int | str = 30, overlap: bool = True) -> AgentFactory:
    """A factory of :class:`Mem0Agent` with the given buffer knobs (mem0 itself is imported on first use)."""
    knobs = {"freq": int(freq), "ns": int(ns), "topk": int(topk), "overlap": bool(overlap)}

    def build(llm: LLMClient, ctx: AgentContext) -> Mem0Agent:
        return Mem0Agent(llm, ctx, **knobs)

    return build
