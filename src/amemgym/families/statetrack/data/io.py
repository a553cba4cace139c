"""Load and save environment files with errors that name the file, the JSON path and the problem."""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from ....errors import DataError
from ....storage import atomic_write_text
from ....textclean import surrogate_path
from .checks import check_environment, check_user
from .model import FORMAT_VERSION, Environment, Protocol, UserEnv


def format_loc(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic error location as a JSON path like ``[3].qas[2].answer_choices[1].state``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(root)"


def _describe(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    msg = str(err.get("msg", "invalid value"))
    return msg[0].lower() + msg[1:] if msg else msg


def _summarise(name: str, problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    return f"{name}: {problems[0]}{more}"


def _validation_problem(exc: ValidationError, prefix: tuple[int | str, ...]) -> list[str]:
    return [f"{format_loc(prefix + tuple(e['loc']))}: {_describe(dict(e))}" for e in exc.errors()]


def _build_users(items: Iterator[tuple[int, Any]], name: str, limit: int | None = None) -> Environment:
    """Validate user items one at a time, stopping at the first bad one (or after ``limit`` good ones).

    Only one raw item is alive at a time (the caller drops each after yielding it), so a file of a million
    broken users costs one user's worth of memory before its error, not a million error records. With
    ``limit`` the items after the first ``limit`` users are never read: a run of two users out of a huge
    file holds two users.
    """
    users: list[UserEnv] = []
    for i, item in items:
        where = surrogate_path(item, f"[{i}]")
        if where is not None:
            raise DataError(f"{name}: {where}: holds a lone UTF-16 surrogate escape (such as \\ud800 without its "
                            "pair), which is no character and cannot be written to any UTF-8 file; fix that escape")
        try:
            user = UserEnv.model_validate(item)
        except ValidationError as exc:
            raise DataError(_summarise(name, _validation_problem(exc, (i,)))) from None
        except RecursionError:
            raise DataError(f"{name}: [{i}]: nested too deeply") from None
        problems = check_user(user, i)
        if problems:
            raise DataError(_summarise(name, problems))
        users.append(user)
        if limit is not None and len(users) >= limit:
            break
    if not users:
        raise DataError(f"{name}: the environment has no users")
    env = Environment.model_construct(users=users)
    problems = check_environment(env, per_user=False)
    if problems:
        raise DataError(_summarise(name, problems))
    return env


def _list_items(raw: list[Any]) -> Iterator[tuple[int, Any]]:
    for i in range(len(raw)):
        item, raw[i] = raw[i], None  # drop the raw item once its model exists
        yield i, item


def parse_environment(raw: Any, name: str = "<data>") -> Environment:
    """Validate already-parsed JSON as an environment (``raw``'s items are released as they are validated).

    Raises:
        DataError: naming ``name``, the JSON path and the problem.
    """
    if isinstance(raw, dict) and "users" in raw:
        raw = raw["users"]
    if not isinstance(raw, list):
        raise DataError(f"{name}: expected a JSON list of users, got {type(raw).__name__}")
    return _build_users(_list_items(raw), name)


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _json_problem(name: str, exc: json.JSONDecodeError) -> DataError:
    return DataError(f"{name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")


#: Characters read from an environment file at a time; a user longer than this is read in growing steps.
READ_CHARS = 1 << 20


class _Stream:
    """A text file read in chunks, holding only the part not yet decoded (plus one item being decoded).

    Positions in error messages are of the whole file: the lines and columns of the dropped prefix are
    counted as it is dropped.
    """

    def __init__(self, fh: TextIO, name: str) -> None:
        self.fh, self.name = fh, name
        self.buf, self.pos, self.eof = "", 0, False
        self._line, self._col = 1, 1  # where ``buf`` starts in the file

    def more(self) -> bool:
        """Read the next chunk (at least as long as what is pending, so a long item is read in few steps)."""
        if self.eof:
            return False
        chunk = self.fh.read(max(READ_CHARS, len(self.buf) - self.pos))
        if not chunk:
            self.eof = True
            return False
        self.drop()
        self.buf += chunk
        return True

    def drop(self) -> None:
        """Forget the decoded prefix ``buf[:pos]``."""
        if not self.pos:
            return
        done = self.buf[:self.pos]
        newlines = done.count("\n")
        self._line += newlines
        self._col = len(done) - done.rfind("\n") if newlines else self._col + len(done)
        self.buf, self.pos = self.buf[self.pos:], 0

    def skip_ws(self) -> str:
        """The next non-whitespace character (moving ``pos`` to it), or "" at the end of the file."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def problem(self, msg: str, at: int) -> DataError:
        """A one-line JSON error at ``buf[at]``, with the file's line and column."""
        before = self.buf[:at]
        newlines = before.count("\n")
        line = self._line + newlines
        col = at - before.rfind("\n") if newlines else self._col + at
        return DataError(f"{self.name}: not valid JSON at line {line} column {col}: {msg}")

    def decode(self, i: int) -> Any:
        """The JSON value at ``pos``, reading on while it is cut off by the end of what was read."""
        while True:
            try:
                item, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():
                    continue
                raise self.problem(exc.msg, exc.pos) from None
            except RecursionError:
                raise DataError(f"{self.name}: [{i}]: nested too deeply to be an environment") from None
            except ValueError:  # Python refuses to parse an integer of thousands of digits
                raise DataError(f"{self.name}: [{i}]: holds a number too long to be read") from None
            if end == len(self.buf) and self.more():
                continue  # a number may go on in the next chunk
            self.pos = end
            return item


def _stream_items(stream: _Stream) -> Iterator[tuple[int, Any]]:
    """The items of the JSON array opening at ``stream.pos``, decoded one at a time, the file read as needed."""
    stream.pos += 1
    if stream.skip_ws() == "]":
        stream.pos += 1
    else:
        i = 0
        while True:
            item = stream.decode(i)
            yield i, item
            del item
            i += 1
            nxt = stream.skip_ws()
            if nxt == ",":
                stream.pos += 1
                stream.skip_ws()
                continue
            if nxt == "]":
                stream.pos += 1
                break
            raise stream.problem("Expecting ',' delimiter", stream.pos)
    if stream.skip_ws():
        raise stream.problem("Extra data", stream.pos)


def load_environment(path: str | Path, *, limit: int | None = None) -> Environment:
    """Load and check an environment file (ours or the original release's ``data.json``).

    The top-level list is read in chunks, decoded and validated user by user, stopping at the first
    problem, so memory holds the users kept plus one being read, never the file's whole text (see
    docs/tiers.md). With ``limit`` (``--limit N``, at least 1) reading stops after the first ``limit`` users.
    A leading UTF-8 byte order mark is accepted.

    Raises:
        DataError: if the file is missing, not a regular file, not JSON, or fails a structural or semantic check.
    """
    p = Path(path)
    name = p.name
    try:
        info = p.stat()
    except FileNotFoundError:
        raise DataError(f"{p}: no such environment file") from None
    except OSError as exc:
        raise DataError(f"{p}: cannot read: {exc.strerror or exc}") from None
    # Opening a FIFO or a device would block or never end; only a regular file can be an environment.
    if not stat.S_ISREG(info.st_mode):
        raise DataError(f"{p}: not a regular file (a directory, pipe or device cannot be an environment)")
    try:
        with open(p, encoding="utf-8-sig") as fh:
            stream = _Stream(fh, name)
            if stream.skip_ws() == "[":
                # Decoded and validated user by user as the file is read: memory holds the users kept, not
                # the file's text (docs/design.md §2).
                return _build_users(_stream_items(stream), name, limit)
            while stream.more():
                pass
            text = stream.buf
    except FileNotFoundError:
        raise DataError(f"{p}: no such environment file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: cannot read: {exc}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_problem(name, exc) from None
    except RecursionError:
        raise DataError(f"{name}: nested too deeply to be an environment") from None
    except ValueError:  # an integer of thousands of digits
        raise DataError(f"{name}: holds a number too long to be read") from None
    del text
    env = parse_environment(raw, name)
    return env if limit is None else env.model_copy(update={"users": env.users[:limit]})


def _user_json(user: UserEnv) -> dict[str, Any]:
    item = user.model_dump(mode="json", by_alias=True, exclude_none=False)
    if item.get("_amemgym") is None:
        item.pop("_amemgym", None)
    return item


def dump_environment(env: Environment) -> str:
    """Serialise an environment exactly as :func:`save_environment` writes it."""
    return json.dumps([_user_json(u) for u in env.users], ensure_ascii=False, indent=2) + "\n"


def environment_sha256(env: Environment) -> str:
    """sha256 of :func:`dump_environment`'s text, computed one user at a time (no whole-file string).

    Each user is dumped as an item of an indented list: its lines shifted by one indent step, joined by
    ``,\n`` inside ``[\n`` and ``\n]\n``, which is byte for byte what ``json.dumps(list, indent=2)`` writes
    (string values never hold a raw newline, so splitting on newlines is safe).
    """
    h = hashlib.sha256()
    if not env.users:
        h.update(b"[]\n")
        return h.hexdigest()
    h.update(b"[\n")
    for i, user in enumerate(env.users):
        text = json.dumps(_user_json(user), ensure_ascii=False, indent=2)
        if i:
            h.update(b",\n")
        h.update(("  " + text.replace("\n", "\n  ")).encode("utf-8"))
    h.update(b"\n]\n")
    return h.hexdigest()


def save_environment(env: Environment, path: str | Path) -> None:
    """Atomically write ``env`` in the original list format (plus our optional ``_amemgym`` keys)."""
    atomic_write_text(Path(path), dump_environment(env))


def with_protocol(user: UserEnv, **fields: Any) -> UserEnv:
    """Return ``user`` with its ``_amemgym`` metadata updated by ``fields``."""
    base = user.amemgym.model_dump() if user.amemgym else {"format_version": FORMAT_VERSION}
    base.update(fields)
    return user.model_copy(update={"amemgym": Protocol(**base)})
