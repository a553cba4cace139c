"""The HTML report of a unit family's runs: the same self-contained page, policy and script as statetrack's.

The engine renders every table from the family's registered unit metrics and pools (``pool.py``); what only a
family has comes as *panels*: typed data (a table, a series against a limit, a trace of steps) that the
family returns per unit and the engine renders. Every string is escaped here; a family never writes HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Protocol

from ..report.html import render_page
from ..scoring.registry import unit_metrics
from .board import entry_flags
from .pool import Found, build_entries
from .read import load_found
from .summary import headline_of

__all__ = ["Panel", "ReportPanels", "SeriesPanel", "TablePanel", "TracePanel", "build_unit_report"]


@dataclass(frozen=True)
class TablePanel:
    """A titled table of text cells."""

    title: str
    head: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]


@dataclass(frozen=True)
class SeriesPanel:
    """Values over steps, drawn as a line, with an optional limit drawn dashed."""

    title: str
    values: Sequence[float]
    limit: float | None
    caption: str


@dataclass(frozen=True)
class TracePanel:
    """Steps grouped under headings (heading, one-line summary, detail), each heading collapsible."""

    title: str
    steps: Sequence[tuple[str, str, str]]


Panel = TablePanel | SeriesPanel | TracePanel


class ReportPanels(Protocol):
    """What a family adds to its report for each unit.

    A unit run under several trial seeds gets one section: the family's optional ``pooled_panels(records)``
    (the trials' records, by run seed) first, then each trial's own panels under a heading naming its seed.
    """

    def report_panels(self, unit_dir: Path, record: Mapping[str, Any]) -> list[Panel]:
        """The unit's panels, in display order."""
        ...


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    th = "".join(f"<th>{escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(_num(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _series(p: SeriesPanel, width: int = 520, height: int = 140) -> str:
    if not p.values:
        return "<p>no steps</p>"
    top = max(max(p.values), p.limit or 0.0, 1.0)
    step = width / max(len(p.values) - 1, 1)
    points = " ".join(f"{i * step:.1f},{height - v / top * height:.1f}" for i, v in enumerate(p.values))
    line = ""
    if p.limit is not None:
        y = height - p.limit / top * height
        line = f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#b00" stroke-dasharray="4"/>'
    return (f'<svg width="{width + 10}" height="{height + 10}" viewBox="-5 -5 {width + 10} {height + 10}" role="img">'
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="none" stroke="#ddd"/>{line}'
            f'<polyline fill="none" stroke="#06c" stroke-width="2" points="{points}"/></svg>'
            f'<p class="hint">{escape(p.caption)} (line; the limit dashed); last value '
            f"{escape(_num(p.values[-1]))}</p>")


def _trace(p: TracePanel) -> str:
    groups: dict[str, list[tuple[str, str]]] = {}
    for heading, summary, detail in p.steps:
        groups.setdefault(heading, []).append((summary, detail))
    parts = [f"<details><summary>{escape(h)}: {len(items)} step(s)</summary>"
             + "".join(f"<div>{escape(s)}<pre>{escape(d[:1200])}</pre></div>" for s, d in items) + "</details>"
             for h, items in groups.items()]
    return "".join(parts) or "<p>no steps</p>"


def render_panel(p: Panel) -> str:
    """One panel as escaped HTML under its title."""
    if isinstance(p, TablePanel):
        inner = _table(p.head, p.rows)
    elif isinstance(p, SeriesPanel):
        inner = _series(p)
    else:
        inner = _trace(p)
    return f"<h4>{escape(p.title)}</h4>{inner}"


def _trials_of_units(found: Sequence[Found]) -> list[list[Found]]:
    """The records grouped per unit of one entry (its trials), each group in run-seed order, units in first-seen
    order."""
    groups: dict[tuple[Any, ...], list[Found]] = {}
    for f in found:
        groups.setdefault((*f.key, f.digest), []).append(f)
    return [sorted(runs, key=lambda r: (r.seed is not None, r.seed or 0)) for runs in groups.values()]


def _unit_section(panels: ReportPanels, runs: Sequence[Found]) -> str:
    """One unit's section: its panels, or, over several trials, the family's pooled panels and then each
    trial's panels under a heading naming its run seed (never one trial's numbers standing for the unit)."""
    first = runs[0]
    if len(runs) == 1:
        body = "".join(render_panel(p) for p in panels.report_panels(first.path, first.record))
        return f"<section><h2>{escape(first.root)}: {escape(first.label)}</h2>{body}</section>"
    pooled = getattr(panels, "pooled_panels", None)
    parts = [render_panel(p) for p in pooled([r.record for r in runs])] if callable(pooled) else []
    for r in runs:
        parts.append(f"<h3>trial with run seed {escape(str(r.seed))}</h3>"
                     + "".join(render_panel(p) for p in panels.report_panels(r.path, r.record)))
    return (f"<section><h2>{escape(first.root)}: {escape(first.label)} ({len(runs)} trials)</h2>"
            + "".join(parts) + "</section>")


def build_unit_report(family: str, run_dirs: list[Path], panels: ReportPanels | None = None, *,
                      noun: str = "units") -> str:
    """The HTML of a report over a unit family's runs: every unit's metrics, each entry's means over units,
    and the family's panels per unit."""
    found, planned = load_found(run_dirs, family)
    metrics = [m for m in unit_metrics(family) if m.column]
    head = headline_of(family)
    unit_rows = [(f.root, f.label, str(f.record.get("agent")), *(f.value(m) for m in metrics),
                  (f.record.get("usage") or {}).get("total", {}).get("calls", 0)) for f in found]
    entries = build_entries(found, planned)
    board_panel: Any = panels if hasattr(panels, "board_flags") else None
    entry_rows = []
    for e in entries:
        stat = e.stat(head)
        ci = "" if stat["lo"] is None else f"[{stat['lo']:.3f}, {stat['hi']:.3f}]"
        trials = e.trials(head)
        entry_rows.append((e.root, e.agent, e.variant, e.model, e.group, e.protocol, len(e.unit_set),
                           1 if trials is None else trials["k"], stat["mean"], ci,
                           "; ".join(entry_flags(e, head, board_panel, noun)[0])))
    notes = "".join(f"<li>{escape(m.label)}: {escape(m.description)}</li>" for m in unit_metrics(family))
    sections = [f'<section id="sec-summary"><h2>Summary</h2><ul class="notes">{notes}</ul>'
                + _table(("run", noun.rstrip("s"), "agent", *(m.label for m in metrics), "calls"), unit_rows)
                + f"<h3>{escape(head.label)} over {escape(noun)}</h3>"
                + f"<p class=\"hint\">One row per run folder given, agent, group and protocol; a unit's trials are "
                  f"averaged before the mean and its 95 % t-interval over {escape(noun)}.</p>"
                + _table(("run", "agent", "variant", "model", "group", "protocol", noun, "trials", head.label,
                          "95% CI", "flags"), entry_rows) + "</section>"]
    if panels is not None:
        sections += [_unit_section(panels, runs) for runs in _trials_of_units(found)]
    return render_page(f"amemgym {family}-family report", "\n".join(sections))


