"""Scrubbing secrets out of error texts before they are stored or printed.

A server (or a proxy in front of it) may echo the request's ``Authorization`` header in an error body, and
that body becomes part of an error message. Every error text passes through :func:`redact` at the LLM
client's boundary, and again where failure records are written, so a key never reaches a results file,
a report or the terminal.
"""

from __future__ import annotations

import re
import threading
from typing import Any

_KNOWN: set[str] = set()
_LOCK = threading.Lock()

#: Shorter "keys" (e.g. a placeholder like "x") are not registered: replacing them would mangle every text.
MIN_SECRET_CHARS = 6
MASK = "[REDACTED]"

# Anything shaped like a credential: a bearer/basic token, an OpenAI-style "sk-..." key, common vendor
# prefixes, and ``user:password@`` in a URL.
_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]{4,}"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}"),
    re.compile(r"\b(?:ghp|gho|ghs|xox[abp]|AIza|hf)_?[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i)(api[_-]?key|authorization|x-api-key)([\"']?\s*[:=]\s*[\"']?)(?!(?:bearer|basic)\b)[^\s\"',;}]{4,}"),
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"),
)


def register_secret(value: str | None) -> None:
    """Remember a configured key so :func:`redact` removes it wherever it appears."""
    if value and len(value.strip()) >= MIN_SECRET_CHARS:
        with _LOCK:
            _KNOWN.add(value.strip())


def _sub(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 2:  # key=value forms keep the name, so the message still says what was hidden
        return f"{groups[0]}{groups[1]}{MASK}"
    if groups and groups[0]:
        return f"{groups[0]} {MASK}"
    return MASK + ("@" if match.group(0).endswith("@") else "")


def redact(text: str) -> str:
    """``text`` with every registered key and anything shaped like a credential replaced by a mask."""
    if not text:
        return text
    with _LOCK:
        known = sorted(_KNOWN, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(_sub, text)
    return text


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (for failure records before they are written)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj
