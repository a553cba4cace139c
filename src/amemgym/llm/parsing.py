"""Robust parsing of model replies: fenced or bare JSON, or a bare number."""

from __future__ import annotations

import json
import re
from typing import Any

from ..textclean import clean_value

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"-?\d+")


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span of ``text``, respecting strings and escapes."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _loads(text: str) -> Any:
    # A reply's JSON may spell a lone surrogate as an escape; decoded as U+FFFD so it can be stored.
    return clean_value(json.loads(text, object_pairs_hook=_no_duplicates))


def parse_json_reply(text: str) -> Any | None:
    """The JSON value in a reply (the whole text, or the fenced blocks / balanced objects inside it), or None.

    A reply that holds several *different* JSON values (``{"answer": 1} {"answer": 2}``) or repeats a key
    is ambiguous and yields None: an answer must commit to one value.
    """
    if text is None:
        return None
    stripped = text.strip()
    try:
        return _loads(stripped)
    except _DuplicateKey:
        return None
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        pass
    found: list[Any] = []
    for cand in [m.group(1).strip() for m in _FENCE.finditer(stripped)] + _balanced_objects(stripped):
        if not cand:
            continue
        try:
            value = _loads(cand)
        except _DuplicateKey:
            return None
        except (ValueError, RecursionError):
            continue
        if value not in found:
            found.append(value)
    return found[0] if len(found) == 1 else None


def parse_choice(text: str, num_choices: int) -> tuple[int | None, str]:
    """The 1-based option a reply picks, with a status.

    Returns:
        ``(k, "ok")`` for a valid pick; ``(None, "out_of_range")`` when the number is outside
        ``1..num_choices``; ``(None, "unparseable")`` when no answer can be found. A JSON object must carry
        the ``answer`` key; otherwise a reply that is only a number (optionally with punctuation) counts.
        Lists, several different numbers, or booleans are never accepted (an answer must be one option).
    """
    value = parse_json_reply(text)
    raw: Any = None
    if isinstance(value, dict):
        if "answer" not in value:
            return None, "unparseable"
        raw = value["answer"]
    elif value is not None and not isinstance(value, list):
        raw = value
    else:
        nums = set(_NUMBER.findall(text or ""))
        if len(nums) != 1 or value is not None:
            return None, "unparseable"
        raw = nums.pop()
    if isinstance(raw, bool):
        return None, "unparseable"
    if isinstance(raw, str):
        raw = raw.strip().rstrip(".").strip()
        if not re.fullmatch(r"-?\d+", raw):
            return None, "unparseable"
        raw = int(raw)
    if isinstance(raw, float):
        if not raw.is_integer():
            return None, "unparseable"
        raw = int(raw)
    if not isinstance(raw, int):
        return None, "unparseable"
    if not 1 <= raw <= num_choices:
        return None, "out_of_range"
    return raw, "ok"
