"""A ranking of runs by memory score that never mixes environments, protocols or incomplete runs."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .aggregate import Summary, summarize
from .load import RunRecord


def protocol_key(run: RunRecord) -> str:
    """What must match for two runs to be ranked together: environment, rounds, run settings, replay or not.

    The agent (what a leaderboard compares) and the off-policy source path are left out.
    """
    proto = run.protocol
    key = {
        "environment_sha256": proto.get("environment_sha256"),
        "rounds": proto.get("rounds"),
        "run": proto.get("run"),
        "off_policy": bool(proto.get("off_policy")),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One run on the board.

    Attributes:
        group: 1-based group number (runs of one group share environment and protocol).
        rank: 1-based rank in its group by memory score, None for incomplete or unscored runs.
        flags: why a run is not ranked or deserves a look.
    """

    group: int
    rank: int | None
    summary: Summary
    environment: str
    flags: tuple[str, ...]


def leaderboard(runs: Sequence[RunRecord]) -> list[Entry]:
    """Group runs by environment and protocol, then rank each group's complete runs by memory score."""
    groups: dict[str, list[RunRecord]] = {}
    for r in runs:
        groups.setdefault(protocol_key(r), []).append(r)
    entries: list[Entry] = []
    for g, members in enumerate(groups.values(), start=1):
        ranked: list[tuple[Summary, str, tuple[str, ...]]] = []
        unranked: list[Entry] = []
        for r in members:
            s = summarize(r.label, r.agent, r.metrics)
            env = (r.environment_sha256 or "unknown")[:12]
            flags = ((() if r.complete else ("incomplete",))
                     + (("no memory score",) if s.memory_score.mean is None else ())
                     + (("off-policy",) if r.protocol.get("off_policy") else ()))
            if r.complete and s.memory_score.mean is not None:
                ranked.append((s, env, flags))
            else:
                unranked.append(Entry(g, None, s, env, flags))
        ranked.sort(key=lambda x: (-(x[0].memory_score.mean or 0.0), x[0].label))
        entries += [Entry(g, rank, s, env, flags) for rank, (s, env, flags) in enumerate(ranked, start=1)]
        entries += unranked
    return entries


COLUMNS = ("group", "rank", "run", "agent", "memory score", "ci low", "ci high", "overall", "upper bound",
           "random", "write", "read", "utilization", "users", "environment", "flags")


def _row(e: Entry) -> list[Any]:
    s = e.summary
    return [e.group, e.rank if e.rank is not None else "-", s.label, s.agent, s.memory_score.mean,
            s.memory_score.lo, s.memory_score.hi, s.overall.mean, s.upper_bound.mean, s.random.mean,
            s.write, s.read, s.utilization, s.users, e.environment, "; ".join(e.flags)]


def _cell(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3f}"
    return "-" if x is None else str(x)


def table_rows(entries: Sequence[Entry]) -> list[list[str]]:
    """The board as display strings, in :data:`COLUMNS` order."""
    return [[_cell(x) for x in _row(e)] for e in entries]


DISPLAY_COLUMNS = ("grp", "rank", "run", "agent", "memory score [95 % CI]", "overall", "UB", "random",
                   "write/read/util", "env", "flags")


def display_rows(entries: Sequence[Entry]) -> list[list[str]]:
    """A compact form of the board for terminals, in :data:`DISPLAY_COLUMNS` order."""
    rows = []
    for e in entries:
        s = e.summary
        rows.append([str(e.group), "-" if e.rank is None else str(e.rank), s.label, s.agent, s.memory_score.text(),
                     _cell(s.overall.mean), _cell(s.upper_bound.mean), _cell(s.random.mean),
                     "/".join(_cell(x) for x in (s.write, s.read, s.utilization)), e.environment[:8],
                     ", ".join(e.flags)])
    return rows


#: Characters that would end a table cell, open raw HTML, code spans, links or emphasis. Underscores stay as
#: they are: inside a word (run_b) they are plain text, and names are full of them.
_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]",
               "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_cell(text: str) -> str:
    """``text`` as literal content of one Markdown table cell: no HTML, no formatting, no line break."""
    flat = " ".join(str(text).split())  # newlines (and other breaks) would end the table row
    return "".join(_MD_ESCAPES.get(ch, ch) for ch in flat)


def to_markdown(entries: Sequence[Entry]) -> str:
    """A Markdown table; every cell is escaped, so a name from a config file stays plain text."""
    esc = markdown_cell
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in table_rows(entries)]
    note = ("\nRuns are ranked only within a group (same environment and protocol); incomplete runs are listed "
            "but not ranked. Intervals: 95 % over users.\n")
    return "\n".join(lines) + "\n" + note


def to_csv(entries: Sequence[Entry]) -> str:
    """CSV with full-precision numbers."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for e in entries:
        writer.writerow(["" if x is None else x for x in _row(e)])
    return buf.getvalue()
