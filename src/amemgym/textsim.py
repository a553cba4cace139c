"""Small text helpers shared across amemgym: snake_case names in words, and cheap lexical similarity (the
validity strategies and the simulator's echo guard)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")


def plain(name: str) -> str:
    """A snake_case name in plain words (``"oud_music"`` -> ``"oud music"``)."""
    return name.replace("_", " ")


def words(text: str) -> frozenset[str]:
    """The set of lower-cased alphanumeric words of ``text``."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def shares_run(a: str, b: str, n: int) -> bool:
    """Whether ``a`` and ``b`` hold the same ``n`` consecutive words (lower-cased, alphanumeric) somewhere: a
    quoted passage, however it is framed or restyled."""
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    if len(wa) < n or len(wb) < n:
        return False
    runs = {tuple(wb[i : i + n]) for i in range(len(wb) - n + 1)}
    return any(tuple(wa[i : i + n]) in runs for i in range(len(wa) - n + 1))
