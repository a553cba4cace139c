"""Request and result records shared by every backend."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

#: One chat message: ``role`` and ``content``, and for native tool use ``tool_calls`` (an assistant's calls in
#: the wire form) or ``tool_call_id`` (a tool result).
ChatMessage = dict[str, Any]

#: The layout of :meth:`ChatRequest.cache_key`, hashed into every key and stamped on the cache file. Bump it
#: whenever the digested bytes change for the same request, so old entries miss instead of matching wrongly.
CACHE_KEY_FORMAT = 2


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

    @cached_property
    def wire_fields(self) -> bytes:
        """The chat-completions body without its ``model``, as canonical JSON (sorted keys, compact, UTF-8).

        Encoded once per request: the same bytes go on the wire (:meth:`body`) and into the cache key
        (:meth:`cache_key`), so a long history is serialised once per call, not once for each. orjson
        writes it about six times faster than the standard library, and the same input always gives the
        same bytes (keys sorted; no whitespace; floats in their shortest round-trip form).
        """
        fields: dict[str, Any] = {"messages": self.messages, "temperature": self.temperature,
                                  "max_tokens": self.max_tokens}
        if self.seed is not None:
            fields["seed"] = self.seed
        if self.json_schema is not None:
            fields["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": self.schema_name, "schema": self.json_schema, "strict": True},
            }
        if self.tools is not None:
            fields["tools"] = self.tools
        if self.tool_choice is not None:
            fields["tool_choice"] = self.tool_choice
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)

    def body(self, model: str) -> bytes:
        """The request body for ``model``: :attr:`wire_fields` with the model name as its first member."""
        # wire_fields is a JSON object with at least "messages", so "{" + model + "," + its members is one
        # valid object; the model is not part of wire_fields because the cache key names the served model.
        return b'{"model":' + orjson.dumps(model) + b"," + self.wire_fields[1:]

    def cache_key(self, backend_id: str, model: str) -> str:
        """A digest of everything that determines the response (never the API key).

        ``model`` is the served model's identity; the rest is the body the backend sends (:attr:`wire_fields`),
        behind :data:`CACHE_KEY_FORMAT` so keys of another format can never be mistaken for these.
        """
        head = orjson.dumps([CACHE_KEY_FORMAT, backend_id, model])
        return hashlib.sha256(head + b"\n" + self.wire_fields).hexdigest()


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
    #: Whether the reply said what it cost (``usage``); without it the counts above are 0, not a measurement.
    tokens_reported: bool = True
