"""Usage accounting per role: calls, tokens, cache hits, retries, faults, seconds."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .limiter import AdaptiveLimiter


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
    cost_usd: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        d = asdict(self)
        d["faults"] = dict(sorted(self.faults.items()))
        d["seconds"] = round(self.seconds, 3)
        d["cost_usd"] = round(self.cost_usd, 6)
        return d

    def merge(self, other: RoleUsage) -> None:
        """Add ``other``'s counters to this one."""
        for name in ("calls", "cache_hits", "cache_replays", "prompt_tokens", "completion_tokens",
                     "prompt_tokens_processed", "seconds", "retries", "failures", "schema_retries", "unusable",
                     "cost_usd"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.faults.update(other.faults)


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
