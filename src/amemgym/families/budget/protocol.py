"""The strict text tool protocol: every agent reply is one JSON object naming a tool and its arguments."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...textclean import clean_value

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
#: Optional arguments (offered in the native tool schema; the harness checks them itself).
OPTIONAL_ARGS: dict[str, dict[str, type]] = {"search": {"k": int}}
#: One line per tool for the native tool schema (the system prompt explains them to text-protocol agents).
TOOL_DESCRIPTIONS: dict[str, str] = {
    "write": "Save a new note (costs one write).",
    "edit": "Replace exact text inside a note (one write; free while a correction notice is on screen).",
    "read": "Show the full text of a note.",
    "search": "Find the notes that best match a query (k: how many, default 5).",
    "list": "Show the start of every note.",
    "forget": "Delete a note (the write it cost is not returned).",
    "done": "Finish the current event when it is not a question.",
    "submit_answer": "Answer the current question with one value or one name.",
}
_JSON_TYPES = {int: "integer", str: "string"}
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
    text = strip_fence(reply)
    try:
        # The escape "\ud800" decodes to a lone surrogate, which no run file could store: U+FFFD instead.
        obj = clean_value(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not a single JSON object ({exc.msg})") from None
    except RecursionError:
        raise ProtocolError("not a single JSON object (nested too deeply)") from None
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
        # isdecimal, not isdigit: "²" is a digit that int() refuses.
        if kind is int and isinstance(value, str) and value.strip().isdecimal():
            args[name] = value = int(value)
        if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
            args[name] = value = str(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ProtocolError(f"{tool}.{name} must be a {kind.__name__}")
    return ToolCall(tool, args)


def function_tools() -> list[dict[str, Any]]:
    """The tools as chat-completions function tools (JSON schema), built from :data:`TOOLS`."""
    out = []
    for name, args in TOOLS.items():
        every = {**args, **OPTIONAL_ARGS.get(name, {})}
        props: dict[str, Any] = {a: {"type": _JSON_TYPES[t]} for a, t in every.items()}
        out.append({"type": "function", "function": {
            "name": name, "description": TOOL_DESCRIPTIONS[name],
            "parameters": {"type": "object", "properties": props, "required": list(args)}}})
    return out


def strip_fence(reply: str) -> str:
    """``reply`` without surrounding whitespace and one enclosing code fence."""
    text = reply.strip()
    m = _FENCE.match(text)
    return m.group(1) if m else text
