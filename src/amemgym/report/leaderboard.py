"""A ranking of runs by memory score that never mixes environments, protocols, incomplete or degenerate runs.

Ranking rules (a careful benchmark user would expect these):

- runs are ranked only within a group of the same environment and protocol;
- incomplete runs, runs without a memory score, and *degenerate* runs (upper bound near random, memory
  score undefined in most cells, or a simulator that mostly echoed: see ``RESULT_FLAGS``) are listed with
  their flags but not ranked, after the ranked runs of their group. A memory score of 1.000 over a
  handful of defined cells must never sit above a real result;
- scores equal at the displayed precision (3 decimals) share a rank (competition ranking: 1, 1, 3) and
  the tied ranks are shown as ``=1``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.board import cell, competition_ranks, csv_table, markdown_table, not_boarded_row
from ..engine.ranking_flags import shown as shown_flag
from ..families.statetrack.metrics import HEADLINE
from ..scoring.registry import Metric, headline, table_metrics
from .aggregate import Summary, summarize
from .load import RunRecord


def protocol_key(run: RunRecord) -> str:
    """A digest of :func:`protocol_fields`: runs with the same one are ranked together."""
    return hashlib.sha256(json.dumps(protocol_fields(run), sort_keys=True).encode("utf-8")).hexdigest()


def protocol_fields(run: RunRecord) -> dict[str, Any]:
    """What must match for two runs to be ranked together: environment, rounds, run settings, replay or not.

    The agent (what a leaderboard compares) and the seed are left out: runs that differ only in their seed
    (trials) measure the same thing. Off-policy runs group by what they replayed (the content hash of the
    source's sessions), not by where the source sits.
    """
    proto = run.protocol
    settings = proto.get("run")
    if isinstance(settings, dict):
        settings = {k: v for k, v in settings.items() if k != "seed"}
    key = {
        "environment_sha256": proto.get("environment_sha256"),
        "rounds": proto.get("rounds"),
        "run": settings,
        # An off-policy run is comparable only with runs that replayed the same conversations: the content
        # hash of the source's sessions (older manifests without it: the source path, to stay apart).
        "off_policy": (proto.get("off_policy_sessions_sha256") or proto.get("off_policy")) or False,
    }
    return key


@dataclass(frozen=True)
class Entry:
    """One run on the board.

    Attributes:
        group: 1-based group number (runs of one group share environment and protocol).
        rank: 1-based rank in its group by memory score, None for incomplete, unscored or degenerate runs.
        flags: why a run is not ranked or deserves a look.
        tied: another ranked run of the group has the same score at the displayed precision.
    """

    group: int
    rank: int | None
    summary: Summary
    environment: str
    flags: tuple[str, ...]
    tied: bool = False

    @property
    def rank_text(self) -> str:
        """``3``, ``=3`` for a tie, ``-`` when not ranked."""
        if self.rank is None:
            return "-"
        return f"={self.rank}" if self.tied else str(self.rank)


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
                     + tuple(shown_flag(f) for f in s.flags)
                     + (("off-policy",) if r.protocol.get("off_policy") else ())
                     + ((trials_flag(r.metrics["trials"]),) if r.metrics.get("trials") else ()))
            if r.complete and s.memory_score.mean is not None and not s.degenerate:
                ranked.append((s, env, flags))
            else:
                unranked.append(Entry(g, None, s, env, flags))
        ranked.sort(key=lambda x: (_shown(x[0]), x[0].label))
        ranks = competition_ranks([_shown(s) for s, _, _ in ranked])
        for (s, env, flags), rank in zip(ranked, ranks, strict=True):
            entries.append(Entry(g, int(rank.lstrip("=")), s, env, flags, tied=rank.startswith("=")))
        entries += unranked
    return entries


def trials_flag(trials: dict[str, Any]) -> str:
    """``3 trials pooled, std 0.041, pass^3 0.52``: how far the trials of a pooled run agree."""
    k = trials.get("k")
    std = ((trials.get("spread") or {}).get("memory_score") or {}).get("std")
    cons = trials.get("consistency")
    return (f"{k} trials pooled, memory score std {'-' if std is None else f'{std:.3f}'}, "
            f"pass^{k} {'-' if cons is None else f'{cons:.3f}'}")


def _shown(s: Summary) -> float:
    # Ties are judged at the precision the board shows, so two runs printed as 0.412 share a rank; the sign
    # puts the better value first in the ascending sort.
    sign = 1.0 if headline().higher_is_better is False else -1.0
    return sign * round(s.stat(HEADLINE).mean or 0.0, 3)


def columns() -> tuple[str, ...]:
    """The board's columns: the headline metric with its interval, then every registered table metric."""
    return ("group", "rank", "run", "agent", headline().label, "ci low", "ci high", "excluded cells",
            *(m.label for m in table_metrics()), "users", "environment", "flags")


def _excluded(s: Summary) -> str | None:
    return None if s.total_cells is None else f"{s.excluded_cells or 0}/{s.total_cells}"


def _row(e: Entry) -> list[Any]:
    s = e.summary
    top = s.stat(HEADLINE)
    return [e.group, e.rank_text, s.label, s.agent, top.mean, top.lo, top.hi, _excluded(s),
            *(s.value(m) for m in table_metrics()), s.users, e.environment, "; ".join(e.flags)]


def table_rows(entries: Sequence[Entry]) -> list[list[str]]:
    """The board as display strings, in :func:`columns` order."""
    return [[cell(x) for x in _row(e)] for e in entries]


def _compact() -> list[tuple[str, tuple[Metric, ...]]]:
    # Narrow columns: one per table metric, except that a group's members share one (write/read/util).
    cols: list[tuple[str, tuple[Metric, ...]]] = []
    groups: dict[str, int] = {}
    for m in table_metrics():
        if m.group is None:
            cols.append((m.short, (m,)))
        elif m.group in groups:
            head, members = cols[groups[m.group]]
            cols[groups[m.group]] = (f"{head}/{m.short}", (*members, m))
        else:
            groups[m.group] = len(cols)
            cols.append((m.short, (m,)))
    return cols


def display_columns() -> tuple[str, ...]:
    """The columns of :func:`display_rows`."""
    return ("grp", "rank", "run", "agent", f"{headline().label} [95 % CI]", *(h for h, _ in _compact()), "env",
            "flags")


def display_rows(entries: Sequence[Entry]) -> list[list[str]]:
    """A compact form of the board for terminals, in :func:`display_columns` order."""
    compact = _compact()
    rows = []
    for e in entries:
        s = e.summary
        rows.append([str(e.group), e.rank_text, s.label, s.agent, s.memory_text(),
                     *("/".join(cell(s.value(m)) for m in members) for _, members in compact),
                     e.environment[:8], ", ".join(e.flags)])
    return rows


def to_markdown(entries: Sequence[Entry]) -> str:
    """A Markdown table; every cell is escaped, so a name from a config file stays plain text."""
    note = ("\nRuns are ranked only within a group (same environment and protocol); incomplete and degenerate "
            "runs (flagged DEGENERATE: upper bound near random, memory score undefined in most cells, or a "
            "degenerate simulator) are listed but not ranked. Equal scores at 3 decimals share a rank (=N). "
            "Excluded cells: (user, period) cells without a memory score (UB <= R). Intervals: 95 % over users.\n")
    return markdown_table(columns(), table_rows(entries)) + "\n" + note


def to_csv(entries: Sequence[Entry], not_boarded: Sequence[tuple[str, str]] = ()) -> str:
    """CSV with full-precision numbers; each (run, reason) of ``not_boarded`` (a folder that could not be read)
    follows as a row with an empty rank and ``not boarded: <reason>`` in ``flags``, so the file lists it too."""
    cols = columns()
    return csv_table(cols, [_row(e) for e in entries] + [not_boarded_row(cols, run, why) for run, why in not_boarded])
