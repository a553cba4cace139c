"""The harness-owned memory store and its write budget.

Accounting, precisely:
- ``write`` and ``edit`` each cost one write from the budget. Reads, searches, listing and ``forget`` are free.
- During a correction event (an announced correction notice) an ``edit`` costs nothing; a ``write`` still
  costs one. A silent contradiction is not a correction event: editing then costs one.
- A call that misses is refunded: an edit of an unknown note or whose ``old`` text is not in the note, a
  write or edit whose resulting note would be empty or longer than the per-note cap. The ledger records the
  charge and the refund, so the net cost is zero and the miss is visible.
- With the budget spent, a write or a charged edit is refused without touching the store (nothing charged).
The agent cannot change any of this: the store, not the agent, counts.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Embed = Callable[[list[str]], np.ndarray]
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class LedgerEntry:
    """One charged operation: what it was, what it cost, and whether it was refunded.

    ``text`` is what the note held after a write or edit that went through: the maintenance gate reads it to
    see which facts were stored before a change arrived (scoring.py).
    """

    event: int
    op: str
    charged: int
    refunded: bool
    note: int | None
    reason: str = ""
    text: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns to the agent."""

    ok: bool
    message: str


@dataclass
class BudgetStore:
    """Notes with a write budget, hybrid BM25 + embedding search, and a ledger of every charge.

    Args:
        budget: memory writes allowed for the episode (``None``: unlimited, for the long-context reference).
        note_chars: longest note content.
        embed: optional embedder; search then fuses BM25 and cosine ranks. ``mode="vector"`` uses it alone.
    """

    budget: int | None
    note_chars: int
    embed: Embed | None = None
    mode: str = "notes"
    notes: dict[int, str] = field(default_factory=dict)
    ledger: list[LedgerEntry] = field(default_factory=list)
    event: int = 0
    correction_active: bool = False
    _next_id: int = 1

    @property
    def writes_used(self) -> int:
        """Net writes charged (refunds subtracted)."""
        return sum(e.charged for e in self.ledger if not e.refunded)

    @property
    def writes_left(self) -> int | None:
        """Writes remaining, or None when unlimited."""
        return None if self.budget is None else self.budget - self.writes_used

    def begin_event(self, index: int, *, correction: bool) -> None:
        """Mark the start of an event; edits are free while ``correction`` holds."""
        self.event = index
        self.correction_active = correction

    def _charge(self, op: str, cost: int, note: int | None) -> LedgerEntry | None:
        if cost and self.writes_left is not None and self.writes_left < cost:
            return None
        entry = LedgerEntry(self.event, op, cost, False, note)
        self.ledger.append(entry)
        return entry

    def _refund(self, entry: LedgerEntry, reason: str) -> None:
        i = len(self.ledger) - 1 - self.ledger[::-1].index(entry)
        self.ledger[i] = LedgerEntry(entry.event, entry.op, entry.charged, True, entry.note, reason)

    def _bad_content(self, text: str) -> str | None:
        if not text.strip():
            return "empty note"
        if len(text) > self.note_chars:
            return f"note of {len(text)} characters exceeds the cap of {self.note_chars}"
        return None

    def write(self, text: str) -> ToolResult:
        """Store a new note (one write)."""
        entry = self._charge("write", 1, None)
        if entry is None:
            return ToolResult(False, "write budget exhausted; nothing stored")
        problem = self._bad_content(text)
        if problem:
            self._refund(entry, problem)
            return ToolResult(False, f"{problem}; nothing stored (refunded)")
        nid = self._next_id
        self._next_id += 1
        self.notes[nid] = text
        i = len(self.ledger) - 1
        self.ledger[i] = LedgerEntry(entry.event, "write", 1, False, nid, text=text)
        return ToolResult(True, f"stored note {nid}; writes left: {self._left_text()}")

    def edit(self, note_id: int, old: str, new: str) -> ToolResult:
        """Replace the first occurrence of ``old`` in note ``note_id`` with ``new``."""
        cost = 0 if self.correction_active else 1
        entry = self._charge("edit", cost, note_id)
        if entry is None:
            return ToolResult(False, "write budget exhausted; edits outside a correction cost one write")
        current = self.notes.get(note_id)
        problem = None
        if current is None:
            problem = f"no note {note_id}"
        elif not old or old not in current:
            problem = "the old text is not in that note"
        else:
            updated = current.replace(old, new, 1)
            problem = self._bad_content(updated) or ("no change" if updated == current else None)
        if problem:
            self._refund(entry, problem)
            return ToolResult(False, f"{problem}; nothing changed (refunded)")
        self.notes[note_id] = updated
        i = len(self.ledger) - 1 - self.ledger[::-1].index(entry)
        self.ledger[i] = LedgerEntry(entry.event, "edit", cost, False, note_id, text=updated)
        return ToolResult(True, f"edited note {note_id} (cost {cost}); writes left: {self._left_text()}")

    def read(self, note_id: int) -> ToolResult:
        """The text of one note (free)."""
        if note_id not in self.notes:
            return ToolResult(False, f"no note {note_id}")
        return ToolResult(True, self.notes[note_id])

    def forget(self, note_id: int) -> ToolResult:
        """Delete a note (free; it does not give the write back)."""
        if self.notes.pop(note_id, None) is None:
            return ToolResult(False, f"no note {note_id}")
        return ToolResult(True, f"forgot note {note_id}")

    def search(self, query: str, k: int = 5, vectors: np.ndarray | None = None) -> list[tuple[int, str]]:
        """The ``k`` notes that best match ``query`` (free).

        ``vectors`` are precomputed embeddings of the query followed by every note in id order (the async
        harness computes them); otherwise the ``embed`` hook is used when set.
        """
        ids = list(self.notes)
        if not ids or k <= 0:
            return []
        if vectors is None and self.embed is not None:
            vectors = self.embed([query] + [self.notes[i] for i in ids])
        ranks: list[list[int]] = []
        if self.mode != "vector" or vectors is None:
            scores = bm25_scores(query, [self.notes[i] for i in ids])
            ranks.append([ids[j] for j in np.argsort(-np.asarray(scores), kind="stable") if scores[j] > 0])
        if vectors is not None:
            vecs = np.asarray(vectors, dtype=float)
            sims = vecs[1:] @ vecs[0]
            ranks.append([ids[j] for j in np.argsort(-sims, kind="stable")])
        fused: Counter[int] = Counter()
        for ranking in ranks:
            for r, nid in enumerate(ranking):
                fused[nid] += 1.0 / (60 + r)  # type: ignore[assignment]
        best = sorted(fused, key=lambda n: (-fused[n], n))[:k]
        return [(n, self.notes[n]) for n in best]

    def summary(self) -> str:
        """The short memory summary the agent sees after each context cut."""
        return f"{len(self.notes)} note(s) stored; writes used {self.writes_used}; writes left {self._left_text()}."

    def _left_text(self) -> str:
        left = self.writes_left
        return "unlimited" if left is None else str(left)


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric tokens."""
    return _TOKEN.findall(text.lower())


def bm25_scores(query: str, docs: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 score of each document for ``query``."""
    toks = [tokens(d) for d in docs]
    n = len(docs)
    avg = sum(len(t) for t in toks) / n if n else 0.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    out = []
    q = tokens(query)
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for term in q:
            if term not in tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            s += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(t) / (avg or 1)))
        out.append(s)
    return out
