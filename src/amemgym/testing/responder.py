"""Deterministic replies for the fake endpoint: every amemgym role answered from the request content alone.

The reply to a request depends only on what the request says (its messages and schema), never on
timing, order or earlier faults, so a run that needed retries ends with the same replies as a run that
did not.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

#: A responder maps a parsed ``/chat/completions`` request body to the reply text, or to a reply message
#: ``{"content": str | None, "tool_calls": [...]}`` that calls tools (chat-completions wire form).
RequestResponder = Callable[[dict[str, Any]], "str | dict[str, Any]"]

ANSWER_MARKER = "Reply with the number of the best option"
PROBE_MARKER = "Based only on what you know about me"
SIMULATOR_MARKER = "role-playing"

_OPTION = re.compile(r"^\s*(\d+)\.\s", re.M)
_PROBE_LINE = re.compile(r"^- ([^:\n]+): one of (.+)$", re.M)

_FOLLOW_UPS = (
    "Could you make that more concrete for my situation?",
    "What would you do first if you were me?",
    "Is there a cheaper way to go about it?",
    "How long would that take before I notice a difference?",
    "What should I avoid while doing that?",
)


def digest(body: dict[str, Any]) -> int:
    """A stable integer from the request's messages (the only input a reply may depend on)."""
    canon = json.dumps(body.get("messages", []), sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(canon.encode("utf-8")).digest()[:8], "big")


def last_user_text(body: dict[str, Any]) -> str:
    """Content of the request's last user message."""
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            return str(msg.get("content") or "")
    return ""


def system_text(body: dict[str, Any]) -> str:
    """Content of the request's system messages, joined."""
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "system")


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks the reply to follow (``response_format`` json_schema), if any."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else {}
    return None


def request_kind(body: dict[str, Any]) -> str:
    """Which amemgym call this is, judged by content: answer, probe, structured, simulator or chat."""
    text = last_user_text(body)
    if ANSWER_MARKER in text:
        return "answer"
    if PROBE_MARKER in text:
        return "probe"
    if request_schema(body) is not None:
        return "structured"
    if SIMULATOR_MARKER in system_text(body):
        return "simulator"
    return "chat"


def minimal_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The smallest value that satisfies a (common subset of) JSON schema.

    Handles ``$ref`` into ``$defs``, ``const``, ``enum``, ``anyOf``/``oneOf``/``allOf`` (first branch),
    objects (required properties only), arrays (``minItems`` items), strings, numbers, booleans and null.
    """
    defs = defs if defs is not None else {**schema.get("definitions", {}), **schema.get("$defs", {})}
    if "$ref" in schema:
        return minimal_instance(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        return {name: minimal_instance(props.get(name, {}), defs) for name in schema.get("required", [])}
    if kind == "array":
        item = schema.get("items", {})
        return [minimal_instance(item, defs) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "x" * int(schema.get("minLength", 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    return None


def _answer(body: dict[str, Any], h: int) -> str:
    options = [int(n) for n in _OPTION.findall(last_user_text(body))]
    count = max(options) if options else 1
    return json.dumps({"answer": h % count + 1})


def _probe(body: dict[str, Any], h: int) -> str:
    picked: dict[str, str] = {}
    for i, (name, values) in enumerate(_PROBE_LINE.findall(last_user_text(body))):
        options = [v.strip() for v in values.split(",") if v.strip()]
        # Each variable gets its own slice of the hash, so the picks are not all the same index.
        picked[name.strip()] = options[(h >> (5 * i)) % len(options)] if options else ""
    return json.dumps(picked)


def default_responder(body: dict[str, Any]) -> str:
    """Plays every amemgym role by content, deterministically.

    * evaluation and upper-bound prompts: ``{"answer": k}`` with k chosen by hashing the request;
    * the state probe: each listed variable mapped to one of its listed values, chosen by hash;
    * structured requests: a minimal instance of the requested schema;
    * the user simulator (a role-playing system prompt): a follow-up question;
    * anything else: a short reply that differs between requests.
    """
    h = digest(body)
    kind = request_kind(body)
    if kind == "answer":
        return _answer(body, h)
    if kind == "probe":
        return _probe(body, h)
    if kind == "structured":
        return json.dumps(minimal_instance(request_schema(body) or {}))
    if kind == "simulator":
        return _FOLLOW_UPS[h % len(_FOLLOW_UPS)]
    return f"Here is a short, practical suggestion for you (note {h % 10_000:04d})."
