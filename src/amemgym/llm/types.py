"""Request and result records shared by every backend."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

ChatMessage = dict[str, str]


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion as the harness asks for it (independent of any backend)."""

    role: str
    messages: tuple[ChatMessage, ...]
    temperature: float = 0.0
    max_tokens: int = 256
    json_schema: dict[str, Any] | None = None
    schema_name: str = "output"
    seed: int | None = None
    tag: str = ""

    def cache_key(self, backend_id: str, model: str) -> str:
        """A digest of everything that determines the response (never the API key)."""
        canon = json.dumps(
            {
                "backend": backend_id,
                "model": model,
                "messages": list(self.messages),
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "schema": self.json_schema,
                "seed": self.seed,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatResult:
    """A completion and what it cost."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    seconds: float = 0.0
    finish_reason: str | None = None
    # Prompt tokens the server actually evaluated (llama.cpp reports it; prefix-cache hits are excluded).
    prompt_tokens_processed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
