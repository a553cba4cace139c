"""Usage accounting per role: calls, tokens, cache hits, retries, faults, seconds."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from .limiter import AdaptiveLimiter


#: The additive counters of :class:`RoleUsage` (faults and ``answered`` aside).
COUNTERS = ("calls", "cache_hits", "cache_replays", "prompt_tokens", "completion_tokens", "prompt_tokens_processed",
            "seconds", "retries", "failures", "schema_retries", "unusable", "truncated", "uncounted",
            "uncounted_rejected", "empty_kept", "empty_kept_attempts", "cost_usd")


@dataclass
class RoleUsage:
    """Counters for one role."""

    calls: int = 0
    cache_hits: int = 0
    #: Of ``cache_hits``, the replies read from the response cache (the rest were shared with an identical call
    #: in flight): a run that replays an earlier one with the same seed shows here.
    cache_replays: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_processed: int = 0
    seconds: float = 0.0
    retries: int = 0
    failures: int = 0
    schema_retries: int = 0
    unusable: int = 0
    #: Fresh replies the server ended at their token limit (``finish_reason`` "length"): cut short, so an answer
    #: or a structured reply may be missing from them.
    truncated: int = 0
    #: Fresh replies that carried no token counts (no ``usage``): their tokens and cost are not in the sums.
    uncounted: int = 0
    #: Replies that arrived and were rejected (empty, malformed) without token counts: paid for, at a cost
    #: nobody said, and not in the sums either.
    uncounted_rejected: int = 0
    #: Calls whose every attempt came back empty, returned as an empty reply because the caller allows one
    #: (``LLMClient.chat(keep_empty=True)``): the model said nothing, and that is what was scored.
    empty_kept: int = 0
    #: The attempts those calls took (each an ``empty_reply`` fault): the model's silence, which
    #: :func:`amemgym.llm.health.endpoint_problems` does not count against the endpoint.
    empty_kept_attempts: int = 0
    cost_usd: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)
    #: The model the role's fresh replies named (their ``model`` field), as first seen; over a run's invocations,
    #: the latest one's. A resume holds the role's endpoint to it (docs/design.md §11).
    answered: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        d = asdict(self)
        d["faults"] = dict(sorted(self.faults.items()))
        d["seconds"] = round(self.seconds, 3)
        d["cost_usd"] = round(self.cost_usd, 6)
        return d

    def merge(self, other: RoleUsage) -> None:
        """Add ``other``'s counters to this one."""
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.faults.update(other.faults)
        self.answered = other.answered or self.answered


class UsageLedger:
    """Usage of every role in one process; cheap to update from the event loop."""

    def __init__(self) -> None:
        self.roles: dict[str, RoleUsage] = {}
        self.in_flight = 0
        #: The live adaptive concurrency limit of each endpoint, for progress displays (not persisted).
        self.limiters: dict[str, AdaptiveLimiter] = {}
        self._started: dict[int, float] = {}
        self._next_call = 0

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Count one attempt on the wire for its duration, with its start time for :meth:`stalled`."""
        token = self._next_call
        self._next_call += 1
        self._started[token] = time.monotonic()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self._started.pop(token, None)

    def stalled(self, threshold_s: float, now: float | None = None) -> tuple[int, float]:
        """How many attempts have waited longer than ``threshold_s``, and the longest wait in seconds."""
        now = time.monotonic() if now is None else now
        waits = [now - t for t in list(self._started.values())]
        slow = [w for w in waits if w > threshold_s]
        return len(slow), max(slow, default=0.0)

    def role(self, name: str) -> RoleUsage:
        """The counters of role ``name`` (created on first use)."""
        if name not in self.roles:
            self.roles[name] = RoleUsage()
        return self.roles[name]

    def totals(self) -> RoleUsage:
        """All roles summed."""
        total = RoleUsage()
        for usage in self.roles.values():
            total.merge(usage)
        total.answered = ""  # a model per role; the sum of roles has none
        return total

    def to_dict(self) -> dict[str, Any]:
        """Per-role counters plus a ``total`` entry."""
        out = {name: u.to_dict() for name, u in sorted(self.roles.items())}
        out["total"] = self.totals().to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UsageLedger:
        """Rebuild a ledger written by :meth:`to_dict` (the ``total`` entry is recomputed)."""
        ledger = cls()
        for name, d in data.items():
            if name == "total":
                continue
            u = ledger.role(name)
            for k, v in d.items():
                if k == "faults":
                    u.faults = Counter(v)
                elif hasattr(u, k):
                    setattr(u, k, v)
        return ledger

    def merge(self, other: UsageLedger) -> None:
        """Add another ledger's counters."""
        for name, usage in other.roles.items():
            self.role(name).merge(usage)


#: The counters a :class:`CallJournal` line carries, in its order (after the invocation id and the role).
JOURNALED = ("calls", "prompt_tokens", "completion_tokens", "prompt_tokens_processed", "seconds", "cost_usd")


class CallJournal:
    """One line per finished model call, appended to a file as the call finishes.

    The periodic flush of a run's usage loses what a SIGKILL interrupts between two flushes; these lines do
    not, because each is one ``write`` to a file opened for appending, which the kernel keeps once the call
    returns (no fsync: a SIGKILL is not a power cut). Lines are small enough that processes sharing the file
    never interleave inside one. What a kill can still lose is a call whose reply had not arrived yet.

    A line is ``[invocation, role, *JOURNALED values]`` as JSON. If the file cannot be written (a full disk),
    the journal stops writing and the run's counts fall back to the periodic flush.
    """

    def __init__(self, path: Path, invocation: str) -> None:
        self.path = Path(path)
        self.invocation = invocation
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(self, role: str, values: tuple[float, ...]) -> None:
        """Append one finished call of ``role`` with its ``JOURNALED`` counts."""
        if self._fd is None:
            return
        try:
            os.write(self._fd, orjson.dumps([self.invocation, role, *values]) + b"\n")
        except OSError:
            self.close()

    def close(self) -> None:
        """Stop writing (idempotent)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def read_journal(path: Path) -> dict[str, UsageLedger]:
    """The journaled counts in ``path`` per invocation (lines that do not parse are skipped)."""
    out: dict[str, UsageLedger] = {}
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
        for line in f:
            try:
                invocation, role, *values = orjson.loads(line)
                usage = out.setdefault(str(invocation), UsageLedger()).role(str(role))
                for name, value in zip(JOURNALED, values, strict=True):
                    setattr(usage, name, getattr(usage, name) + value)
            except (orjson.JSONDecodeError, TypeError, ValueError):
                continue
    return out
