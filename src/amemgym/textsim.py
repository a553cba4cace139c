"""Small text helpers shared across amemgym: snake_case names in words, and cheap lexical similarity (the
validity strategies and the simulator's echo guard)."""

from __future__ import annotations

import re

#: Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana, CJK ideographs).
_UNSPACED_RANGES = r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
UNSPACED = re.compile(rf"[{_UNSPACED_RANGES}]")
#: A run of letters and digits of any script, or a run of a script written without spaces. Marks split a run
#: (Devanagari vowel signs are not letters to ``\w``), the same way in both texts compared.
_WORD = re.compile(rf"[{_UNSPACED_RANGES}]+|[^\W_{_UNSPACED_RANGES}]+")


def plain(name: str) -> str:
    """A snake_case name in plain words (``"oud_music"`` -> ``"oud music"``)."""
    return name.replace("_", " ")


def tokens(text: str) -> list[str]:
    """The lower-cased words of ``text`` in order: its runs of letters and digits (see :data:`_WORD`), and in a
    script written without spaces, where no space ends a word, every two neighbouring characters (a single
    character would make any two Thai or kana sentences look alike: their alphabets are small)."""
    out: list[str] = []
    for run in _WORD.findall(text.lower()):
        if len(run) > 2 and UNSPACED.match(run):
            out += [run[i:i + 2] for i in range(len(run) - 1)]
        else:
            out.append(run)
    return out


def words(text: str) -> frozenset[str]:
    """The set of :func:`tokens` of ``text``."""
    return frozenset(tokens(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def shares_run(a: str, b: str, n: int) -> bool:
    """Whether ``a`` and ``b`` hold the same ``n`` consecutive :func:`tokens` somewhere: a quoted passage,
    however it is framed or restyled."""
    wa, wb = tokens(a), tokens(b)
    if len(wa) < n or len(wb) < n:
        return False
    runs = {tuple(wb[i : i + n]) for i in range(len(wb) - n + 1)}
    return any(tuple(wa[i : i + n]) in runs for i in range(len(wa) - n + 1))
