"""The console summary of a unit-family run: the units, the family's panel, the means per group, the usage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Column, Table

from ..llm.health import empty_note, truncation_note, uncounted_note
from ..llm.usage import UsageLedger
from ..scoring.registry import Metric, unit_metrics
from .pool import Entry, Found, build_entries
from .usage import UsageBook, incomplete_note

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from .contract import UnitFamily, UnitRow

__all__ = ["ci_text", "headline_of", "print_run_summary"]


def headline_of(family: str) -> Metric:
    """The unit metric a family's boards rank by.

    Raises:
        LookupError: the family registered no headline metric.
    """
    for m in unit_metrics(family):
        if m.headline:
            return m
    raise LookupError(f"family {family!r} registered no headline unit metric")


def ci_text(stat: dict[str, Any], noun: str = "units") -> str:
    """``0.812 [0.700, 0.900] (95 % t-interval over episodes)``, or why there is no interval."""
    if stat.get("mean") is None:
        return "n/a"
    if stat.get("lo") is None:
        return f"{stat['mean']:.3f} (one {noun.rstrip('s')}, no interval)"
    return f"{stat['mean']:.3f} [{stat['lo']:.3f}, {stat['hi']:.3f}] (95 % t-interval over {noun})"


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def print_run_summary(console: Console, family: UnitFamily, out_dir: Path, rows: list[UnitRow], found: list[Found],
                      ledger: UsageLedger, seconds: float) -> None:
    """The unit table (every metric of a lone unit), the family's lines, each entry's headline with its
    interval over units, then what this invocation spent."""
    metrics = [m for m in unit_metrics(family.name) if m.column]
    if len(rows) == 1 and rows[0].record is not None:
        r = rows[0]
        table = Table("metric", "value", title=f"{family.name}/{r.unit.label} - {r.record.get('agent')}")  # type: ignore[union-attr]
        for m in metrics:
            table.add_row(m.label, _num(m.fn(r.record)))
    else:
        table = Table(Column(family.noun.rstrip("s"), overflow="fold"), "group", *(m.label for m in metrics), "calls",
                      "status", title=f"{family.name} run: {len(rows)} {family.noun} - {out_dir}")
        for r in rows:
            if r.record is None:
                table.add_row(r.unit.id, r.unit.group, *("-" for _ in metrics), "-", r.status)
                continue
            calls = (r.record.get("usage") or {}).get("total", {}).get("calls", 0)
            table.add_row(r.unit.id, r.unit.group, *(_num(m.fn(r.record)) for m in metrics), str(calls), r.status)
    console.print(table)
    family.summary(console, rows)
    entries = build_entries(found)
    print_entries(console, family, entries)
    t = ledger.totals()
    console.print(f"this invocation: {t.calls} model calls, {t.cache_hits} cache hits, {t.prompt_tokens} prompt + "
                  f"{t.completion_tokens} completion tokens, {seconds:.1f} s; results under {out_dir}",
                  highlight=False)
    lost = incomplete_note(UsageBook(out_dir).cumulative().get("incomplete"))
    if lost:
        console.print(lost, highlight=False, markup=False)
    spent = ledger.to_dict()
    for note in (truncation_note(spent), uncounted_note(spent), empty_note(spent)):
        if note:
            console.print(note, highlight=False, markup=False)


def print_entries(console: Console, family: UnitFamily, entries: list[Entry]) -> None:
    """Per entry, the headline mean with its interval over units (groups never averaged together)."""
    try:
        head = headline_of(family.name)
    except LookupError:
        return
    group_noun = getattr(family, "group_noun", "unit group")
    for e in entries:
        console.print(f"{e.agent} on {group_noun} {e.group} ({e.protocol}), {len(e.unit_set)} "
                      f"{family.noun.rstrip('s')}(s): {head.label} "
                      f"{ci_text(e.stat(head), family.noun)}", highlight=False, markup=False)
    if len(entries) > 1:
        console.print(f"note: the {family.noun} span several groups or protocols; each is summarised on its own, "
                      "never averaged together", highlight=False, markup=False)
