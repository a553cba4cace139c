"""Request and result records shared by every backend."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: One chat message: ``role`` and ``content``, and for native tool use ``tool_calls`` (an assistant's calls in
#: the wire form) or ``tool_call_id`` (a tool result).
ChatMessage = dict[str, Any]


@dataclass(frozen=True)
class ToolCallOut:
    """A function call a model returned: its id, the function's name and the arguments as the model wrote them."""

    id: str
    name: str
    arguments: str

    def to_wire(self) -> dict[str, Any]:
        """The chat-completions form (an entry of an assistant message's ``tool_calls``)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> ToolCallOut:
        """Rebuild from :meth:`to_wire`."""
        return cls(str(d["id"]), str(d["function"]["name"]), str(d["function"]["arguments"]))


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
    #: Function tools offered to the model (chat-completions ``tools``), and how it must use them.
    tools: tuple[dict[str, Any], ...] | None = None
    tool_choice: str | dict[str, Any] | None = None

    def cache_key(self, backend_id: str, model: str) -> str:
        """A digest of everything that determines the response (never the API key)."""
        fields: dict[str, Any] = {
            "backend": backend_id,
            "model": model,
            "messages": list(self.messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "schema": self.json_schema,
            "seed": self.seed,
        }
        # Added only when used, so the keys of every request without tools stay what they were.
        if self.tools is not None:
            fields["tools"] = list(self.tools)
        if self.tool_choice is not None:
            fields["tool_choice"] = self.tool_choice
        canon = json.dumps(
            fields,
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
    #: Function calls the model made (native tool use); ``text`` may then be empty.
    tool_calls: tuple[ToolCallOut, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
