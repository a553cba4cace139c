"""Chart data for the report page: plain JSON that ``charts.js`` draws as SVG in the browser.

Building the page this way costs milliseconds and needs no plotting library; matplotlib draws the same
quantities only for ``amemgym report --figures`` (see :mod:`amemgym.report.figures`). Every number is
rounded to 4 decimals (the page shows at most 3), and ``None`` stays ``null``: an undefined value is drawn
as such, never as zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .aggregate import Grid, Stat, curve_panels, failure_kinds, signed

# Colour-blind-safe palette (Okabe-Ito), the same order as the matplotlib figures.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")

#: Heat maps with more cells than this start collapsed on the page.
COLLAPSE_CELLS = 120


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _stat(s: Stat) -> dict[str, float | None] | None:
    return None if s.mean is None else {"mean": _r(s.mean), "lo": _r(s.lo), "hi": _r(s.hi)}


def curves_chart(series: Mapping[str, Mapping[str, Sequence[Stat]]],
                 panels: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Per-period curves: a panel per quantity, a line per run, 95 % bands where defined.

    ``panels`` defaults to every registered metric that asks for a curve.
    """
    panels = curve_panels() if panels is None else panels
    return {
        "kind": "curves",
        "panels": [{"name": n, "title": t, "signed": signed(n)} for n, t in panels],
        "series": [{"label": label, "colour": PALETTE[i % len(PALETTE)],
                    "curves": {n: [_stat(s) for s in curves.get(n, [])] for n, _ in panels}}
                   for i, (label, curves) in enumerate(series.items())],
    }


def diagnosis_chart(rates: Mapping[str, Mapping[str, Sequence[float | None]]]) -> dict[str, Any]:
    """Failure-rate bars per period: a panel per registered failure rate (write, read, utilization), a bar per run."""
    kinds = failure_kinds()
    return {
        "kind": "bars",
        "panels": [{"name": k, "title": f"{k} failures"} for k in kinds],
        "series": [{"label": label, "colour": PALETTE[i % len(PALETTE)],
                    "values": {k: [_r(v) for v in by_kind.get(k, [])] for k in kinds}}
                   for i, (label, by_kind) in enumerate(rates.items())],
    }


def heatmap_chart(grid: Grid, title: str, *, vmin: float = 0.0, vmax: float = 1.0, diverging: bool = False,
                  undefined: str = "no value for this cell") -> dict[str, Any]:
    """A labelled grid; ``null`` cells are drawn hatched, and the legend says what ``undefined`` means."""
    return {
        "kind": "heatmap",
        "title": title,
        "rows": list(grid.rows),
        "cols": list(grid.cols),
        "values": [[_r(v) for v in row] for row in grid.values],
        "vmin": vmin,
        "vmax": vmax,
        "diverging": diverging,
        "undefined": undefined,
    }


def is_large(chart: dict[str, Any]) -> bool:
    """Whether a heat map is big enough to start collapsed."""
    return len(chart["rows"]) * max(1, len(chart["cols"])) > COLLAPSE_CELLS
