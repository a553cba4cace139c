"""Robust parsing of model replies: fenced or bare JSON, or a bare number."""

from __future__ import annotations

import json
import re
from typing import Any

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


def parse_json_reply(text: str) -> Any | None:
    """The JSON value in a reply (whole text, a fenced block, or the first balanced object), or None."""
    if text is None:
        return None
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(stripped)]
    candidates += _balanced_objects(stripped)
    for cand in candidates:
        if not cand:
            continue
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
    return None


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
