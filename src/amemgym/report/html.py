"""Assemble the self-contained HTML report: tables, charts, and the trace browser.

Every interpolated string goes through ``html.escape``; charts are drawn in the browser by ``charts.js``
from the same JSON block as the browser's data (labels reach the page only as text nodes); figures given
as SVG bytes are ``<img>`` data URIs (an SVG image cannot run script); and a Content-Security-Policy admits
only the page's own script (by hash), so even a missed escape could not execute injected code or reach
the network.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from typing import Any

from ..engine.ranking_flags import shown
from ..scoring.registry import headline, table_metrics
from .aggregate import Summary, fmt
from .browser import embed_json
from .extras import AUDIT_ORDER, AuditSummary, LeakGuard

#: One run's row of the simulator table: its summary, its audit (if any) and its leak-guard counts (if known).
SimulatorRow = tuple[Summary, AuditSummary | None, LeakGuard | None]


@dataclass(frozen=True)
class FigureImage:
    """A figure to place in the page: encoded SVG bytes, or the id of a chart in the page's chart data.

    ``collapsed`` puts it in a closed ``<details>`` (large heat maps), so the page stays navigable.
    """

    title: str
    svg: bytes = b""
    caption: str = ""
    chart: str = ""
    collapsed: bool = False


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def summary_table(summaries: Sequence[Summary]) -> str:
    """The per-run headline table, a column per registered table metric; a memory-recall column appears
    when some run carries recall."""
    recall = any(s.memory_recall.mean is not None for s in summaries)
    metrics = table_metrics()
    head = ("run", "agent", f"{headline().label} [95 % CI]", *(("memory recall",) if recall else ()),
            *(m.label for m in metrics), "users", "tokens", "cost (USD)", "wall s (last)", "complete", "flags")
    rows = []
    for s in summaries:
        cells = (s.label, s.agent, s.memory_text(), *((s.memory_recall.text(),) if recall else ()),
                 *(s.cell_text(m) for m in metrics), str(s.users), f"{s.total_tokens:,}",
                 f"{s.total_cost:.4f}", fmt(s.wall_seconds, 1), "yes" if s.complete else "NO",
                 "; ".join(shown(f) for f in s.flags))
        css = ' class="degenerate"' if s.degenerate else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return _table(head, rows, "summary")


def usage_table(summaries: Sequence[Summary]) -> str:
    """Calls, tokens and cost per role and run (cumulative over invocations)."""
    head = ("run", "role", "calls", "cache hits", "prompt tokens", "completion tokens", "cost (USD)")
    rows = []
    for s in summaries:
        for u in s.usage:
            cells = (s.label, u.role, str(u.calls), str(u.cache_hits), f"{u.prompt_tokens:,}",
                     f"{u.completion_tokens:,}", f"{u.cost_usd:.4f}")
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        rows.append(f'<tr><td colspan="{len(head)}">no usage recorded</td></tr>')
    return _table(head, rows, "usage")


def simulator_table(rows: Sequence[SimulatorRow]) -> str:
    """Simulator audit rates per check next to each run's memory score, with the leak guard's counts.

    Empty (no table) when no run has an audit or a leak-guard event, so ordinary reports are unchanged.
    """
    guarded = any(g is not None and (g.resimulated or g.unresolved) for _, _, g in rows)
    degenerate = any(s.simulator_degenerate for s, _, _ in rows)
    if not guarded and not degenerate and all(a is None for _, a, _ in rows):
        return ""
    seen = {c for _, a, _ in rows if a is not None for c, _ in a.rates}
    checks = [c for c in AUDIT_ORDER if c in seen] + sorted(seen - set(AUDIT_ORDER))
    head = ("run", "memory score", "degenerate turns (of all)", "turns audited",
            *(c.replace("_", " ") for c in checks), "judge failures", "resimulated draws", "unresolved leaks")
    body = []
    for s, audit, guard in rows:
        rates = dict(audit.rates) if audit else {}
        share = (f"{s.simulator_degenerate}/{s.simulator_turns}" if s.simulator_turns is not None
                 and s.simulator_degenerate is not None else "-")
        cells = (s.label, s.memory_score.text(), share, str(audit.turns) if audit else "-",
                 *(_pct(rates.get(c)) if audit and c in rates else "-" for c in checks),
                 str(audit.judge_failures) if audit and audit.judged is not None else "-",
                 str(guard.resimulated) if guard else "-", str(guard.unresolved) if guard else "-")
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return ("<h3>User simulator</h3>\n<p class=\"hint\">Degenerate turns (empty, copies of the opening, echoes "
            "of the assistant's reply, repeats; counted for every run), the share of simulator turns failing each "
            "check of <code>amemgym audit-sim</code> (- = not audited), and the turns the leak guard of "
            "<code>run.resimulate_leaks</code> redrew or could not fix.</p>\n" + _table(head, body, "simulator"))


def _table(head: Sequence[str], rows: Sequence[str], css_id: str) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f'<table id="{escape(css_id)}"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def figure_block(fig: FigureImage) -> str:
    """A figure: a chart drawn by ``charts.js``, or an ``<img>`` with an SVG data URI."""
    cap = f"<figcaption>{escape(fig.caption)}</figcaption>" if fig.caption else ""
    if fig.chart:
        body = f'<div class="chart" data-chart="{escape(fig.chart)}" aria-label="{escape(fig.title)}"></div>'
    else:
        uri = "data:image/svg+xml;base64," + base64.b64encode(fig.svg).decode("ascii")
        body = f'<img alt="{escape(fig.title)}" src="{uri}">'
    block = f"<figure>{body}{cap}</figure>"
    if fig.collapsed:
        return (f'<details class="collapsed-figure"><summary>{escape(fig.title)} (large: click to show)</summary>'
                f"{block}</details>")
    return block


#: The page's sections, in order, for the table of contents.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("sec-summary", "Summary"), ("sec-curves", "Per-period curves"), ("sec-diagnosis", "Failure diagnosis"),
    ("sec-heatmaps", "Heat maps"), ("sec-browser", "Trace browser"),
)


def toc() -> str:
    """The table of contents: one link per section."""
    links = "".join(f'<li><a href="#{sid}">{escape(name)}</a></li>' for sid, name in SECTIONS)
    return f'<nav id="toc" aria-label="contents"><ul>{links}</ul></nav>'


def page_script() -> str:
    """The one script every report page carries (the trace browser and the charts)."""
    return _asset("viewer.js") + "\n" + _asset("charts.js")


def page_csp() -> str:
    """The Content-Security-Policy of every report page: nothing from the network, no script but the page's own
    (admitted by its hash), images only as data URIs, no forms, no base URL."""
    script_hash = base64.b64encode(hashlib.sha256(page_script().encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'")


def render_page(title: str, body: str, data: dict[str, Any] | None = None) -> str:
    """A self-contained page with the report's style, policy and script around ``body`` (already escaped HTML).

    ``data`` is the script's JSON block (no runs to browse, no charts by default).
    """
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(page_csp())}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_asset("style.css")}</style>
</head>
<body>
<header><h1>{escape(title)}</h1></header>
{body}
<pre id="console-errors" hidden></pre>
<script type="application/json" id="report-data">{embed_json(data or {"runs": [], "charts": {}})}</script>
<script>{page_script()}</script>
</body>
</html>
"""


def render_report(
    *,
    title: str,
    summaries: Sequence[Summary],
    notes: Sequence[str],
    curves: FigureImage,
    diagnosis: FigureImage,
    heatmaps: Sequence[tuple[str, Sequence[FigureImage]]],
    browser: list[dict[str, Any]],
    simulator: Sequence[SimulatorRow] = (),
    charts: dict[str, Any] | None = None,
) -> str:
    """The whole HTML document.

    Args:
        title: page title.
        summaries: one per run, in legend order.
        notes: warnings shown at the top (missing environment files, incomplete runs, ...).
        curves: the per-period curves figure.
        diagnosis: the failure-rate bars figure.
        heatmaps: per run label, its heat map figures.
        browser: per run, the data of :func:`amemgym.report.browser.browser_run`.
        simulator: per run, its simulator audit and leak-guard counts (see :func:`simulator_table`).
        charts: chart data by id (see :mod:`amemgym.report.charts`), for figures that name a chart.
    """
    notes_html = "".join(f"<li>{escape(n)}</li>" for n in notes)
    heat_html = "".join(
        f'<div class="heat-run"><h3>{escape(label)}</h3>{"".join(figure_block(f) for f in figs)}</div>'
        for label, figs in heatmaps
    )
    body = f"""{toc()}
<ul id="notes" class="notes">{notes_html}</ul>
<section id="sec-summary"><h2>Summary</h2>
<p class="hint">Memory score = (overall - random) / (upper bound - random) per user and period;
intervals are 95 % over users. Failure rates: write and read per probed variable, utilization per question.</p>
{summary_table(summaries)}
{simulator_table(simulator)}
<h3>Usage per role (all invocations)</h3>
{usage_table(summaries)}
</section>
<section id="sec-curves"><h2>Per-period curves</h2>{figure_block(curves)}</section>
<section id="sec-diagnosis"><h2>Failure diagnosis per period</h2>{figure_block(diagnosis)}</section>
<section id="sec-heatmaps"><h2>Heat maps</h2>
<p class="hint">Hatched cells are undefined (their legend says why); they are never drawn as zero. Large heat maps
start collapsed: click their title to open them.</p>
{heat_html}</section>
<section id="sec-browser"><h2>Trace browser</h2>
<div class="controls">
<label>run <select id="pick-run"></select></label>
<label>user <select id="pick-user"></select></label>
<label>period <select id="pick-period"></select></label>
</div>
<div id="browser" data-selected=""></div>
</section>"""
    return render_page(title, body, {"runs": browser, "charts": charts or {}})
