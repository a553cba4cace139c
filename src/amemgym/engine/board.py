"""Leaderboard and paired comparison of a unit family's runs, with the family's panel for what differs.

The board pools records (``pool.py``) into one row per folder given, agent, group and protocol, averaged over
units, and ranks rows by the family's headline metric only against rows of the same group and protocol that
ran exactly the same units. Rows with a unit lacking the headline, or with planned units unfinished, are
listed but not ranked; means equal at 3 decimals share a rank (``=N``). The columns are the family's unit
metrics (the registry); a family's :class:`BoardPanel` adds flags and notes of its own. A folder that cannot be
read is listed as "not boarded" with its reason (a CSV row with an empty rank, the reason in ``flags``) while
the others are still ranked, as on the statetrack board.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import AMemGymError, RunError
from ..families import Board
from ..scoring.registry import unit_metrics
from .pool import Entry, Found, Pending, build_entries
from .ranking_flags import model_change_flag
from .read import MAX_DEPTH, load_found, load_root, refuse_nothing_finished, refuse_started_unit, unique_labels
from .rundir import UnitRunDir
from .summary import headline_of

__all__ = ["BoardPanel", "Pairing", "board_table", "cell", "competition_ranks", "csv_table", "entry_flags",
           "distinct_labels", "load_boardable", "markdown_cell", "markdown_table", "not_boarded_row", "pair_runs"]

#: Characters that would end a table cell, open raw HTML, code spans, links or emphasis. Underscores stay as
#: they are: inside a word (run_b) they are plain text, and names are full of them.
_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]",
               "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_cell(text: str) -> str:
    """``text`` as literal content of one Markdown table cell: no HTML, no formatting, no line break."""
    flat = " ".join(str(text).split())  # newlines (and other breaks) would end the table row
    return "".join(_MD_ESCAPES.get(ch, ch) for ch in flat)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table of display ``rows``; every cell is escaped, so a name from a config file stays text."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def csv_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV of ``rows`` with full-precision numbers (None as an empty field)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(["" if x is None else x for x in row] for row in rows)
    return buf.getvalue()


def cell(x: Any) -> str:
    """A board value as displayed: 3 decimals, ``-`` for none."""
    if isinstance(x, float):
        return f"{x:.3f}"
    return "-" if x is None else str(x)


def competition_ranks(shown: Sequence[float]) -> list[str]:
    """Ranks of values already sorted best first and rounded to the displayed precision: equal values share a
    rank (competition ranking, 1, 1, 3), shown as ``=1``."""
    return [f"={shown.index(v) + 1}" if shown.count(v) > 1 else str(shown.index(v) + 1) for v in shown]


class BoardPanel(Protocol):
    """What a family adds to its board: flags that do not stop ranking, and notes under the table."""

    def board_flags(self, entry: Entry) -> list[str]:
        """Extra flags of one row (shown; the row is still ranked)."""
        ...

    def board_notes(self, entry: Entry) -> list[str]:
        """Extra notes about one row, printed under the table."""
        ...


def not_boarded_row(columns: Sequence[str], run: str, reason: str) -> list[Any]:
    """A CSV row for a folder that could not be boarded: its run label, an empty rank and every number empty,
    ``not boarded: <reason>`` in ``flags``."""
    row: list[Any] = [None] * len(columns)
    row[columns.index("run")] = run
    row[columns.index("flags")] = f"not boarded: {reason}"
    return row


def load_boardable(family: str, run_dirs: Sequence[Path],
                   noun: str = "units") -> tuple[list[Found], list[Pending], list[tuple[Path, str, str]]]:
    """The records and unfinished work of every folder that can be read, and (folder, label, reason) of each
    that cannot (a damaged file, a hand-edited record, nothing finished yet), labels unique over all folders.

    Raises:
        RunError: no folder could be read (naming the only one's reason, or the first of several).
    """
    paths = [Path(d) for d in run_dirs]
    found: list[Found] = []
    pending: list[Pending] = []
    skipped: list[tuple[Path, str, str]] = []
    for root, label in zip(paths, unique_labels(paths), strict=True):
        try:
            refuse_started_unit(root, family, noun)
            f, p = load_root(root, label, family)
            refuse_nothing_finished(root, f, p, noun)
        except AMemGymError as exc:
            skipped.append((root, label, str(exc)))
            continue
        found += f
        pending += p
    if not found:
        first = skipped[0][2] if skipped else f"no {family}-family results"
        raise RunError(first if len(skipped) == 1 else f"no run could be boarded ({len(skipped)} folders): "
                       f"not boarded: {skipped[0][0]}: {first}")
    return found, pending, skipped


def board_table(family: str, run_dirs: Sequence[Path], panel: BoardPanel | None = None, *, noun: str = "units",
                group_noun: str = "unit group") -> Board:
    """One row per folder given, agent (name, variant, served model), group and protocol (see the module)."""
    head = headline_of(family)
    others = [m for m in unit_metrics(family) if m.column and m is not head]
    found, pending, skipped = load_boardable(family, run_dirs, noun)
    entries = build_entries(found, pending)
    columns = ("group", "rank", "run", "agent", "variant", "model", group_noun, "protocol", noun, "trials", head.label,
               f"{head.label} 95% CI", *(m.label for m in others), "flags")
    groups: dict[tuple[str, str, frozenset[str]], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.group, e.protocol, e.unit_set), []).append(e)
    full: list[list[Any]] = []
    notes: list[str] = []
    for g, ((grp, proto, _), members) in enumerate(groups.items(), start=1):
        flagged = {id(e): entry_flags(e, head, panel, noun) for e in members}
        scored = sorted((e for e in members if flagged[id(e)][1]),
                        key=lambda e: (-round(e.stat(head)["mean"] or 0.0, 3), e.agent, e.model))
        shown = [round(e.stat(head)["mean"] or 0.0, 3) for e in scored]
        ordered = list(zip(scored, competition_ranks(shown), strict=True))
        ordered += [(e, "-") for e in members if not flagged[id(e)][1]]
        for e, rank in ordered:
            stat = e.stat(head)
            ci = None if stat["lo"] is None else f"[{stat['lo']:.3f}, {stat['hi']:.3f}]"
            trials = e.trials(head)
            full.append([g, rank, e.root, e.agent, e.variant, e.model, grp, proto, len(e.unit_set),
                         1 if trials is None else trials["k"], stat["mean"], ci,
                         *(e.stat(m)["mean"] for m in others), "; ".join(flagged[id(e)][0])])
            if panel is not None:
                notes += panel.board_notes(e)
            if trials is not None:
                std = "n/a" if trials["spread"]["std"] is None else f"{trials['spread']['std']:.4f}"
                passk = "n/a" if trials["consistency"] is None else f"{trials['consistency']:.3f}"
                notes.append(f"note: {e.root} ({e.agent}, {grp}, {proto}): {trials['k']} trials averaged per "
                             f"{noun.rstrip('s')}; {head.label} std between trials {std}; pass^{trials['k']} over "
                             f"questions {passk}"
                             + ("" if trials["same_units"] else f" (the trials ran different {noun})"))
    by_kind: dict[tuple[str, str], list[int]] = {}
    for g, (grp, proto, _) in enumerate(groups, start=1):
        by_kind.setdefault((grp, proto), []).append(g)
    for (grp, proto), gs in by_kind.items():
        if len(gs) > 1:
            notes.append(f"note: groups {', '.join(map(str, gs))} ({group_noun} {grp}, {proto}) ran different sets of "
                         f"{noun}; each is ranked on its own and their ranks are not comparable")
    if len(by_kind) > 1:
        notes.append(f"note: runs differ in {group_noun} or protocol; each group is ranked separately")
    rows = [[cell(x) for x in row] for row in full]
    lost = [f"not boarded: {root}: {reason}" for root, _, reason in skipped]
    notes += lost
    explain = (f"\nOne row per run folder given, agent, {group_noun} and protocol; each number is the mean over the "
               f"row's {noun} (a unit's trials are averaged first), with a 95 % t-interval over {noun} for "
               f"{head.label} ({head.description}). Rows are ranked only within a group of the same {group_noun} and "
               f"protocol that ran the same set of {noun}; rows with a unit lacking {head.label}, with unfinished "
               f"{noun} or from a run that did not finish are listed but not ranked. Equal means at 3 decimals share a "
               "rank (=N).\n")
    return Board(family, f"amemgym leaderboard: {family} family (mean over {noun}, ranked within {group_noun}, "
                 f"protocol and {noun.rstrip('s')} set)", columns, rows, notes,
                 markdown_table(columns, rows) + "\n" + explain + "".join(f"\n{markdown_cell(x)}\n" for x in lost),
                 csv_table(columns, full + [not_boarded_row(columns, label, reason) for _, label, reason in skipped]))


def entry_flags(e: Entry, head: Any, panel: BoardPanel | None, noun: str) -> tuple[list[str], bool]:
    """An entry's flags and whether it may be ranked (a unit without the headline, unfinished units, a run that
    did not finish, or a model changed during the run keep it off the ranking; the family's flags and repeated
    seeds do not)."""
    flags, rankable = [], True
    missing = e.units_without(head)
    if missing:
        flags.append(f"no {head.label} on {len(missing)} {noun.rstrip('s')}(s)")
        rankable = False
    if e.unfinished:
        flags.append(f"unfinished: {len(e.unfinished)} planned {noun.rstrip('s')}(s) have no results")
        rankable = False
    if e.incomplete:
        flags.append(f"incomplete: {'; '.join(e.incomplete)}")
        rankable = False
    changed = model_change_flag([c for r in e.runs for c in r.record.get("model_changes") or []])
    if changed:
        flags.append(changed)
        rankable = False
    if panel is not None:
        flags += panel.board_flags(e)
    repeated = e.repeated_seeds()
    if repeated:
        flags.append(f"{len(repeated)} {noun.rstrip('s')}(s) run twice under one seed (averaged)")
    return flags, rankable


@dataclass(frozen=True)
class Pairing:
    """Two run collections matched unit by unit on the headline metric.

    Attributes:
        diffs: per shared unit (its label, made distinct by ``distinct_labels``), the difference B - A (one value
            each).
        value_a, value_b: per shared unit, each side's value (its trials averaged).
        only_a, only_b: units (labels) on one side only, or without a value on the other.
        protocols: the protocols seen on each side.
        trials: the most records (trials) any unit has on each side.
        unfinished: per side, what its runs have not finished (planned units without a result, a run whose
            ``metrics.json`` says it is not complete); empty when the side finished.
    """

    diffs: dict[str, list[float]]
    value_a: dict[str, float]
    value_b: dict[str, float]
    only_a: list[str]
    only_b: list[str]
    protocols: tuple[set[str], set[str]]
    trials: tuple[int, int] = (1, 1)
    unfinished: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def unfinished_work(pending: Sequence[Pending], noun: str) -> tuple[str, ...]:
    """What a side of a comparison has not finished, one phrase per run, in a form to print.

    Raises:
        RunError: a run never wrote ``metrics.json`` (killed, or still running): its numbers are not final, as a
            statetrack run without one is refused.
    """
    by_run: dict[Path, list[Pending]] = {}
    for p in pending:
        by_run.setdefault(p.run, []).append(p)
    out = []
    for run, items in by_run.items():
        metrics = UnitRunDir(run).metrics_path
        if not metrics.exists():
            raise RunError(f"{run}: {metrics} is missing: the run has not finished (killed, or still running); "
                           "run `amemgym run` again with the same --out to finish it before comparing")
        units = [p.unit for p in items if p.unit is not None]
        reasons = [p.reason for p in items if p.reason is not None]
        if units:
            shown = ", ".join(units[:5]) + (" ..." if len(units) > 5 else "")
            out.append(f"{run}: {len(units)} planned {noun.rstrip('s')}(s) have no results ({shown})")
        out += [f"{run}: {r}" for r in reasons]
    return tuple(out)


def _by_unit(family: str, root: Path, noun: str,
             group_noun: str) -> tuple[dict[str, tuple[str, float | None, int]], set[str], tuple[str, ...]]:
    found, pending = load_found([root], family)
    if not found:
        raise RunError(f"{root}: no {family}-family results here or up to {MAX_DEPTH} levels below")
    unfinished = unfinished_work(pending, noun)
    entries = build_entries(found)
    if len(entries) > 1:
        names = "; ".join(f"{e.agent}/{e.variant}/{e.model}/{e.group}/{e.protocol}" for e in entries)
        raise RunError(f"{root}: holds runs of more than one agent, {group_noun} or protocol ({names}); compare "
                       "needs one per side")
    (entry,) = entries
    twice = entry.repeated_seeds()
    if twice:
        raise RunError(f"{root}: {noun.rstrip('s')} {twice[0]} was run twice under one seed; compare needs one run "
                       f"per {noun.rstrip('s')} and trial seed on each side")
    head = headline_of(family)
    labels = {r.digest: r.label for r in found}
    counts = {d: len(rs) for d, rs in entry.by_unit().items()}
    return ({d: (labels[d], v, counts[d]) for d, v in entry.unit_value(head).items()}, {entry.protocol}, unfinished)


def distinct_labels(labels: dict[str, str]) -> dict[str, str]:
    """Per unit digest, its label, with the digest added where units of different files share a label (two
    salts of one budget seed): the pairing is keyed by these, so no unit overwrites another."""
    count = Counter(labels.values())
    return {d: label if count[label] == 1 else f"{label} ({d})" for d, label in labels.items()}


def pair_runs(family: str, run_a: Path, run_b: Path, *, noun: str = "units", group_noun: str = "unit group") -> Pairing:
    """Match two run collections by unit (the digest of its file) on the headline metric, trials averaged.

    Raises:
        RunError: a side has no run, has a run that never wrote ``metrics.json``, mixes agents, groups or
            protocols, runs a unit twice under one seed, or no unit has a value on both sides.
    """
    (a, pa, ua), (b, pb, ub) = _by_unit(family, run_a, noun, group_noun), _by_unit(family, run_b, noun, group_noun)
    shared = sorted(k for k in a.keys() & b.keys() if a[k][1] is not None and b[k][1] is not None)
    if not shared:
        raise RunError(f"{run_a} and {run_b} share no {noun.rstrip('s')} with a value on both sides")
    name = distinct_labels({**{k: v[0] for k, v in b.items()}, **{k: v[0] for k, v in a.items()}})
    diffs, va, vb = {}, {}, {}
    for k in shared:
        va[name[k]], vb[name[k]] = a[k][1] or 0.0, b[k][1] or 0.0
        diffs[name[k]] = [vb[name[k]] - va[name[k]]]
    return Pairing(diffs, va, vb, sorted(name[k] for k in a if k not in shared),
                   sorted(name[k] for k in b if k not in shared), (pa, pb),
                   (max(n for _, _, n in a.values()), max(n for _, _, n in b.values())), (ua, ub))


