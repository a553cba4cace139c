"""Scrubbing secrets out of everything amemgym stores or prints.

A server (or a proxy in front of it) may echo the request's ``Authorization`` header: in an error body, but
also in a successful reply or in the model list of ``/models``. Two levels of scrubbing:

- :func:`redact`, for error texts: every registered key and anything shaped like a credential (bearer and
  basic tokens, ``sk-`` and vendor keys, ``api_key=...``, ``user:password@`` in URLs). Error texts are ours,
  so a false match costs nothing.
- :func:`redact_content`, for everything else written or printed (run files, traces, reports, the response
  cache, the console; ``amemgym.storage`` applies it to every write): registered keys and bearer-shaped
  tokens only, narrow enough to leave ordinary conversation ("a basic recipe", "the bearer of news") alone.
  Its patterns never match a JSON quote or backslash, so a JSON text stays valid JSON.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

_KNOWN: set[str] = set()
#: The registered keys, longest first, with their JSON-escaped forms (a key inside a JSON text).
_KNOWN_SORTED: list[str] = []
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


# Credential shapes that can be told from prose: a bearer token or an ``sk-`` key with at least one digit, and
# ``user:password@`` after a URL scheme. None of them crosses a quote, a backslash or whitespace.
_TOKEN = r"(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]"
_CONTENT_PATTERNS = (
    re.compile(rf"(?i)\b(bearer)\s+{_TOKEN}{{12,}}"),
    re.compile(rf"\b(?:sk|pk|rk)-{_TOKEN}{{16,}}"),
    re.compile(r"(?<=://)[^/\s:@\"'\\]+:[^/\s@\"'\\]+@"),
)
#: A cheap first look: text without any of these needs no pattern at all.
_CONTENT_HINT = re.compile(r"(?i)bearer|[spr]k-|://[^/\s]*@")


def register_secret(value: str | None) -> None:
    """Remember a configured key so :func:`redact` removes it wherever it appears."""
    if value and len(value.strip()) >= MIN_SECRET_CHARS:
        secret = value.strip()
        with _LOCK:
            _KNOWN.add(secret)
            forms = {k for s in _KNOWN for k in (s, json.dumps(s, ensure_ascii=False)[1:-1])}
            _KNOWN_SORTED[:] = sorted(forms, key=len, reverse=True)


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


def redact_content(text: str) -> str:
    """``text`` with every registered key and every bearer-shaped token replaced by a mask.

    For run files, reports, the cache and the console; see the module docstring for why it is narrower
    than :func:`redact`.
    """
    if not text:
        return text
    with _LOCK:
        known = list(_KNOWN_SORTED)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    if _CONTENT_HINT.search(text):
        for pattern in _CONTENT_PATTERNS:
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
