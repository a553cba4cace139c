"""A scripted model for tests: a real backend whose replies are a function of the conversation.

It goes through the same limits, retries, cache and accounting as any other backend, so tests exercise
the real code paths. Measurements never use it; the agent conformance checker does.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..llm.backends import PermanentError, TransientError
from ..llm.cache import ResponseCache
from ..llm.client import LLMClient
from ..llm.types import ChatRequest, ChatResult

Script = Callable[[ChatRequest], "str | ChatResult | BaseException"]


class ScriptedBackend:
    """Answers each request with ``responder(request)``; an exception it returns is raised.

    Args:
        responder: maps the request (role, messages, schema, tag, tools) to reply text, a whole
            :class:`ChatResult` (to return tool calls), or an exception.
        latency: seconds to sleep per call (simulates a remote endpoint).
        name: identity used in cache keys.
    """

    def __init__(self, responder: Script, *, latency: float = 0.0, name: str = "scripted") -> None:
        self.responder = responder
        self.latency = latency
        self.backend_id = f"fake:{name}"
        self.requests: list[ChatRequest] = []

    async def complete(self, req: ChatRequest) -> ChatResult:
        """Reply per the script."""
        self.requests.append(req)
        if self.latency:
            await asyncio.sleep(self.latency)
        out = self.responder(req)
        if isinstance(out, BaseException):
            if isinstance(out, TransientError | PermanentError):
                raise out
            raise out
        if isinstance(out, ChatResult):
            return out  # e.g. a reply that calls tools
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in req.messages)
        return ChatResult(text=out, model="scripted", prompt_tokens=prompt_tokens,
                          completion_tokens=len(out.split()), finish_reason="stop")


def last_user(req: ChatRequest) -> str:
    """The content of the last user message of a request."""
    for m in reversed(req.messages):
        if m["role"] == "user":
            return m["content"]
    return ""


class HashEmbedder:
    """Deterministic bag-of-words hashing embedder (no model) for tests and model-free strategies."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.backend_id = f"hash:{dim}"
        self.name = "hash"

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        """Embed synchronously."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in text.lower().split():
                tok = tok.strip(".,!?;:\"'()[]")
                if not tok:
                    continue
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
            n = np.linalg.norm(out[i])
            if n > 0:
                out[i] /= n
        return out

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed (async contract)."""
        return self.embed_sync(list(texts))

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - convenience
        return self.embed_sync(*args)


#: Every role a run, a generation or an evolution may call.
SCRIPTED_ROLES = ("agent", "simulator", "memory", "judge", "generator")


class ScriptedClient(LLMClient):
    """A real :class:`~amemgym.llm.client.LLMClient` whose chat roles are answered by one
    :class:`ScriptedBackend`, kept as ``scripted`` so a test can count and read the requests that reached
    the model (cache hits never do)."""

    def __init__(self, backend: ScriptedBackend, roles: Sequence[str], *, cache: ResponseCache | None,
                 embedder: HashEmbedder | None) -> None:
        super().__init__(backends={role: backend for role in roles}, embedder=embedder, cache=cache,
                         backoff_base=0.001)
        self.scripted = backend


def scripted_client(script: Script, *, cache: Path | None = None, embedder: bool = True,
                    roles: Sequence[str] = SCRIPTED_ROLES) -> ScriptedClient:
    """A :class:`ScriptedClient` answering ``roles`` with ``script``.

    Args:
        script: maps each request to its reply (see :class:`ScriptedBackend`).
        cache: a response-cache file, to exercise caching and resume; None for no cache.
        embedder: use :class:`HashEmbedder` for embeddings (no model needed).
        roles: the roles the script answers; any other role resolves from the (default) configuration.
    """
    return ScriptedClient(ScriptedBackend(script), roles, cache=ResponseCache(cache) if cache is not None else None,
                          embedder=HashEmbedder() if embedder else None)
