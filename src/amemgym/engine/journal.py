"""A JSON value saved by appending what changed since the last save, and read back by folding the lines.

A checkpoint saved after every step often holds something that only grows (a conversation, a list of
memories): rewriting it in full each time writes O(n^2) bytes over a run. A journal file instead holds
JSON lines:

* ``{"journal": 1, "value": V}``: the whole value (always the first line; written by atomic replace);
* ``{"changes": [op, ...]}``: edits of the value of the lines before it, applied in order.

An op is ``["set", path, v]`` (a dict key, new or not, or a list item), ``["del", path]`` (a dict key),
``["extend", path, items]`` (a list grew at its end) or ``["append", path, text, cut]`` (a string grew at
its end, after its last ``cut`` characters were dropped, 0 when left out; only where no API key or
credential can span the joint, since each line is redacted on its own); ``path``
is the list of keys and indexes from the top. :func:`changes` finds them by comparing the new value with
the last one saved, strictly as JSON: ``1`` and ``1.0``, ``0.0`` and ``-0.0``, ``True`` and ``1`` differ,
and so does the order of a dict's keys, so the folded value always serializes to the same JSON as the
value saved. Anything the ops cannot say (the top value changed type) is a whole-value line.

Compaction: when the file would grow past twice its whole-value line, the next save rewrites it as one
whole-value line instead, so the file stays within about twice the value's size and the bytes written over
a growing run stay linear in its final size. The first save of every writer is a whole-value line too, which
also drops a line torn by a kill before it.

A kill mid-append leaves a last line without its newline: that save did not land, and :func:`fold` returns
the value of the lines before it. A complete line that is not a journal line is a broken file (RunError).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..redact import joins_safely
from ..storage import append_text, atomic_write_text

__all__ = ["JournalFile", "apply", "changes", "fold", "saves"]

FORMAT = 1

#: Stands in the mirror for a value :func:`changes` cannot compare strictly (a dict with keys that are not
#: strings, an object of another type): it never equals anything, so such a value is always set anew.
_OPAQUE = object()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` serialize to the same JSON text (a list and a tuple are the same JSON array)."""
    if a is b:
        return a is not _OPAQUE
    ta, tb = type(a), type(b)
    if ta is dict:
        if tb is not dict or len(a) != len(b):
            return False
        keys = list(a)
        if keys != list(b):  # order matters: it is part of the text
            return False
        for k in keys:
            x, y = a[k], b[k]
            if x is not y and not _same(x, y):
                return False
        return True
    if ta is list or ta is tuple:
        if (tb is not list and tb is not tuple) or len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if x is not y and not _same(x, y):
                return False
        return True
    if ta is not tb:
        return False  # 1 and 1.0, True and 1 are different texts
    if ta is float:
        return repr(a) == repr(b)  # 0.0 and -0.0
    return ta in (str, int, bool) and bool(a == b)


def _str_keys(d: dict[Any, Any]) -> bool:
    return all(type(k) is str for k in d)


def _copy(value: Any) -> Any:
    """A copy of ``value`` whose containers are ours (the caller may reuse its own), sharing the immutable leaves."""
    t = type(value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()} if _str_keys(value) else _OPAQUE
    if t is list or t is tuple:
        return [_copy(v) for v in value]
    if t in (str, int, float, bool) or value is None:
        return value
    return _OPAQUE


def _diff(old: Any, new: Any, path: list[Any], ops: list[list[Any]]) -> None:
    """Append to ``ops`` the edits that turn ``old`` (the mirror) into ``new``."""
    if _same(old, new):
        return
    told, tnew = type(old), type(new)
    if told is dict and tnew is dict and _str_keys(new):
        kept = [k for k in old if k in new]
        # Folding keeps the order of kept keys and puts new ones last; anything else is a whole new dict.
        if kept + [k for k in new if k not in old] == list(new):
            for k in old:
                if k not in new:
                    ops.append(["del", [*path, k]])
            for k, v in new.items():
                if k in old:
                    _diff(old[k], v, [*path, k], ops)
                else:
                    ops.append(["set", [*path, k], v])
            return
    elif told is list and tnew in (list, tuple) and len(new) >= len(old):
        for i, (x, y) in enumerate(zip(old, new, strict=False)):
            if x is not y and not _same(x, y):
                _diff(x, y, [*path, i], ops)
        if len(new) > len(old):
            ops.append(["extend", path, list(new[len(old):])])
        return
    elif told is str and tnew is str and len(new) > len(old):
        cut = _tail_edit(old, new)
        # Each line is redacted on its own: a key split between two lines would escape the mask.
        if cut is not None and joins_safely(old[:len(old) - cut], new[len(old) - cut:]):
            ops.append(["append", path, new[len(old) - cut:], *([cut] if cut else [])])
            return
    ops.append(["set", path, new])


#: How many characters at the end of a string that grew may change too and still be an append: a base64
#: text whose byte length is not a multiple of 3 rewrites its last padded quantum (4 characters) as it grows.
_MAX_CUT = 8


def _tail_edit(old: str, new: str) -> int | None:
    """The fewest characters to cut from the end of ``old`` so that ``new`` starts with the rest (at most
    :data:`_MAX_CUT`); None when ``new`` differs earlier."""
    if new.startswith(old):
        return 0
    keep = len(old) - min(_MAX_CUT, len(old))
    if not new.startswith(old[:keep]):
        return None
    while old[keep] == new[keep]:  # ``new`` is the longer: the loop ends inside ``old``
        keep += 1
    return len(old) - keep


def changes(old: Any, new: Any) -> list[list[Any]] | None:
    """The ops that turn ``old`` into ``new`` as JSON; None when only a whole value can say it.

    ``old`` is a value as :func:`fold` returns it (or a copy of a value saved); ``new`` any JSON-ready value.
    """
    ops: list[list[Any]] = []
    _diff(old, new, [], ops)
    if any(not op[1] and op[0] == "set" for op in ops):
        return None
    return ops


def apply(value: Any, ops: list[list[Any]], *, copy: bool = False) -> Any:
    """``value`` with ``ops`` applied (changed in place where it can be); ``copy``: copy what ops bring in.

    Raises:
        ValueError: an op that does not fit the value (a path that is not there, an unknown op).
    """
    holder = [value]
    for op in ops:
        if not isinstance(op, list) or len(op) not in (2, 3, 4) or not isinstance(op[1], list):
            raise ValueError(f"not an op: {op!r}")
        kind = op[0]
        path: list[Any] = [0, *op[1]]  # the holder first
        arg = (_copy(op[2]) if copy else op[2]) if len(op) >= 3 else None
        try:
            parent: Any = holder
            for step in path[:-1]:
                parent = parent[step]
            key: Any = path[-1]
            # JSON keys are strings and indexes are ints; a list's set replaces an item that is there.
            if type(key) is not (str if isinstance(parent, dict) else int):
                raise TypeError(f"key {key!r}")
            if len(op) == 4 and kind != "append":
                raise ValueError(f"op {kind!r} takes no fourth part")
            if kind == "set" and len(op) == 3:
                if isinstance(parent, list) and not 0 <= int(key) < len(parent):
                    raise IndexError(key)
                parent[key] = arg
            elif kind == "del" and len(op) == 2 and isinstance(parent, dict):
                del parent[key]
            elif kind == "extend" and isinstance(parent[key], list) and isinstance(arg, list):
                parent[key].extend(arg)
            elif kind == "append" and isinstance(parent[key], str) and isinstance(arg, str):
                cut = op[3] if len(op) == 4 else 0  # characters dropped from the end first
                if type(cut) is not int or not 0 <= cut <= len(parent[key]):
                    raise ValueError(f"cut {cut!r}")
                parent[key] = parent[key][:len(parent[key]) - cut] + arg
            else:
                raise ValueError(f"op {kind!r} does not fit")
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"op {kind!r} at {op[1]!r} does not fit the value ({exc!r})") from None
    return holder[0]


_MISSING = object()


def _complete_lines(path: Path) -> list[bytes]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise RunError(f"{path}: unreadable ({exc})") from None
    lines = data.split(b"\n")
    lines.pop()  # the torn tail of a killed append, or b"" after the last newline
    return lines


def saves(path: Path) -> int:
    """How many complete lines (saves that landed) the journal at ``path`` holds.

    Raises:
        RunError: the file is unreadable.
    """
    return len(_complete_lines(path))


def fold(path: Path, upto: int | None = None) -> Any:
    """The value of the journal at ``path``: its last whole value with every complete change line after it.

    A last line without its newline (a save killed mid-append) did not land and is ignored. ``upto``: fold only
    the first ``upto`` complete lines (the value as it stood after that save), to look behind a bad tail.

    Raises:
        RunError: the file is unreadable, holds no complete whole-value line, or a complete line is not a
            journal line that fits (naming the file and line).
    """
    lines = _complete_lines(path)
    if upto is not None:
        lines = lines[:upto]
    value: Any = _MISSING
    for n, raw in enumerate(lines, start=1):
        try:
            line = json.loads(raw)
            if not isinstance(line, dict):
                raise ValueError("not a JSON object")
            if "value" in line and line.get("journal") == FORMAT:
                value = line["value"]
            elif isinstance(line.get("changes"), list) and value is not _MISSING:
                value = apply(value, line["changes"])
            else:
                raise ValueError("neither a whole value nor changes after one")
        except (ValueError, UnicodeDecodeError) as exc:
            raise RunError(f"{path} line {n}: broken checkpoint journal ({exc})") from None
    if value is _MISSING:
        raise RunError(f"{path}: truncated checkpoint journal (no complete line)")
    return value


class JournalFile:
    """The writer's side of one journal: what it last saved, so the next save appends only what changed.

    Used from one thread at a time (the engine's writer runs it in its drainer, in queue order).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._mirror: Any = _MISSING  # a copy of the last value saved (ours, so the caller may reuse its own)
        self._whole = 0  # characters of the last whole-value line
        self._size = 0  # characters in the file

    def save(self, value: Any) -> bool:
        """Save ``value`` (fsynced before returning); True when it rewrote the file as one whole-value line."""
        ops = None if self._mirror is _MISSING else changes(self._mirror, value)
        if ops is not None:
            if not ops:
                return False  # the file already folds to this value
            line = _dumps({"changes": ops}) + "\n"
            if self._size + len(line) <= 2 * self._whole:
                append_text(self.path, line)
                self._size += len(line)
                self._mirror = apply(self._mirror, ops, copy=True)
                return False
        text = _dumps({"journal": FORMAT, "value": value}) + "\n"
        atomic_write_text(self.path, text)
        self._whole = self._size = len(text)
        self._mirror = _copy(value)
        return True
