"""The strict text tool protocol: every agent reply is one JSON object naming a tool and its arguments."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

TOOLS: dict[str, dict[str, type]] = {
    "write": {"text": str},
    "edit": {"id": int, "old": str, "new": str},
    "read": {"id": int},
    "search": {"query": str},
    "list": {},
    "forget": {"id": int},
    "done": {},
    "submit_answer": {"answer": str},
}
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


class ProtocolError(ValueError):
    """A reply that is not exactly one well-formed tool call."""


@dataclass(frozen=True)
class ToolCall:
    """A parsed tool call."""

    tool: str
    args: dict[str, Any]


def parse_call(reply: str) -> ToolCall:
    """The one tool call in ``reply`` (a bare JSON object, optionally in one code fence).

    Raises:
        ProtocolError: for anything else: prose around the object, several objects, unknown tools, or
            missing or mistyped arguments.
    """
    text = reply.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not a single JSON object ({exc.msg})") from None
    if not isinstance(obj, dict) or set(obj) - {"tool", "args"} or "tool" not in obj:
        raise ProtocolError('expected {"tool": NAME, "args": {...}}')
    tool, args = obj["tool"], obj.get("args", {})
    if tool not in TOOLS:
        raise ProtocolError(f"unknown tool {tool!r} (tools: {', '.join(TOOLS)})")
    if not isinstance(args, dict):
        raise ProtocolError("args must be an object")
    for name, kind in TOOLS[tool].items():
        if name not in args:
            raise ProtocolError(f"{tool} needs argument {name!r}")
        value = args[name]
        if kind is int and isinstance(value, str) and value.strip().isdigit():
            args[name] = value = int(value)
        if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
            args[name] = value = str(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ProtocolError(f"{tool}.{name} must be a {kind.__name__}")
    return ToolCall(tool, args)
