"""Text from outside made writable: lone UTF-16 surrogates become U+FFFD.

A Python string may hold a surrogate code point (U+D800..U+DFFF) on its own: ``json.loads`` makes one out of
the escape ``"\\ud800"``, and plug-in code can return one. Such a string cannot be encoded as UTF-8, so it
would fail the first file write or cache store that meets it. Text is cleaned where it enters amemgym (a
model's HTTP reply, JSON decoded from a reply, whatever a plug-in agent returns), so what a run keeps in
memory is what it writes and what a resumed run reads back.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; ``text`` itself when it has none.

    A high surrogate followed by a low one is joined into the character the pair encodes, as a JSON decoder
    does with the escapes ``"\\ud83d\\ude00"``.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in it, dict keys included.

    Lists, tuples and dicts are walked; any other object is returned as it is. A container without a
    surrogate anywhere is returned itself rather than a copy (a plug-in's snapshot can be large).
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        pairs = [(clean_value(k), clean_value(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [clean_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def surrogate_path(value: Any, path: str = "") -> str | None:
    """The JSON path (``[0].qas[1].query``) of the first string in ``value`` that holds a lone surrogate, dict
    keys included, or None. For input files, which are refused rather than cleaned: the file is the user's, and
    a changed value would no longer be what they wrote."""
    if isinstance(value, str):
        return path if not value.isascii() and _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{path}.{clean_text(k) if isinstance(k, str) else k}" if path else str(k)
            found = surrogate_path(k, here) or surrogate_path(v, here)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = surrogate_path(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


__all__ = ["clean_text", "clean_value", "surrogate_path"]
