"""Figures (data in, matplotlib Figure out) and their SVG / PNG encodings.

matplotlib is an optional extra (``amemgym[report]``), imported only when a figure is made. Figures are
built on ``matplotlib.figure.Figure`` directly, never through pyplot, so no global figure state exists.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BackendUnavailable
from ..storage import atomic_write_bytes
from .aggregate import Grid, Stat, curve_panels, failure_kinds, signed

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Colour-blind-safe palette (Okabe-Ito) so runs stay distinguishable in print.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: Inches per curve panel (four panels fill an 11-inch row).
PANEL_WIDTH = 11 / 4
_RC = {"svg.fonttype": "none", "svg.hashsalt": "amemgym", "font.size": 9}


def _figure_class() -> type[Figure]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise BackendUnavailable("figures need matplotlib: pip install 'amemgym[report]'") from None
    return Figure


def colour(i: int) -> str:
    """The colour of the i-th run."""
    return PALETTE[i % len(PALETTE)]


def curves_figure(series: Mapping[str, Mapping[str, Sequence[Stat]]],
                  panels: Sequence[tuple[str, str]] | None = None) -> Figure:
    """Per-period curves: one panel per quantity (each registered metric by default), a line per run.

    Args:
        series: ``series[run_label][curve_name]`` is the list of per-period stats.
            Shaded bands are the 95 % intervals where defined.
        panels: ``(curve_name, title)`` per panel, in order (default: every registered metric's curve);
            self-evolution reports add ``aggregate.RECALL_CURVE``.
    """
    panels = curve_panels() if panels is None else panels
    fig = _figure_class()(figsize=(PANEL_WIDTH * len(panels), 3.0), layout="constrained")
    axes = fig.subplots(1, len(panels), sharex=True, squeeze=False)[0]
    for ax, (name, title) in zip(axes, panels, strict=True):
        for i, (label, curves) in enumerate(series.items()):
            stats = list(curves.get(name, []))
            xs = [p for p, s in enumerate(stats) if s.mean is not None]
            ax.plot(xs, [stats[p].mean for p in xs], marker="o", ms=3, color=colour(i), label=label)
            band = [p for p in xs if stats[p].lo is not None and stats[p].hi is not None]
            if band:
                ax.fill_between(band, [stats[p].lo for p in band], [stats[p].hi for p in band],
                                color=colour(i), alpha=0.15, linewidth=0)
        ax.set_title(title)
        ax.set_xlabel("period")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        if not signed(name):
            ax.set_ylim(-0.02, 1.02)
        else:
            ax.axhline(0.0, color="#888888", linewidth=0.8)
    axes[0].legend(fontsize=8, loc="best")
    return fig


def diagnosis_figure(rates: Mapping[str, Mapping[str, Sequence[float | None]]]) -> Figure:
    """Failure-rate bars per period: one panel per kind (write, read, utilization: the
    registered failure rates), one bar per run.

    Args:
        rates: ``rates[run_label][kind]`` is the list of per-period rates (None = undefined, not drawn).
    """
    kinds = failure_kinds()
    fig = _figure_class()(figsize=(11, 3.0), layout="constrained")
    axes = fig.subplots(1, len(kinds), sharey=True, squeeze=False)[0]
    n_runs = max(1, len(rates))
    width = 0.8 / n_runs
    for ax, kind in zip(axes, kinds, strict=True):
        for i, (label, by_kind) in enumerate(rates.items()):
            vals = list(by_kind.get(kind, []))
            xs = [p + (i - (n_runs - 1) / 2) * width for p, v in enumerate(vals) if v is not None]
            ax.bar(xs, [v for v in vals if v is not None], width=width, color=colour(i), label=label)
        ax.set_title(f"{kind} failures")
        ax.set_xlabel("period")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("rate")
    axes[0].legend(fontsize=8, loc="upper left")
    return fig


def heatmap_figure(grid: Grid, title: str, *, vmin: float = 0.0, vmax: float = 1.0, cmap: str = "viridis") -> Figure:
    """A heat map of a labelled grid; missing cells are left blank, values written in small grids."""
    rows, cols = max(1, len(grid.rows)), max(1, len(grid.cols))
    undefined = [(r, c) for r, row in enumerate(grid.undefined) for c, flag in enumerate(row) if flag]
    # The legend of undefined cells sits under the axes and needs room of its own.
    height = min(40.0, 1.2 + 0.28 * rows + (0.6 if undefined else 0.0))
    fig = _figure_class()(figsize=(min(12.0, 2.5 + 0.6 * cols), height), layout="constrained")
    ax = fig.subplots()
    data = np.full((rows, cols), np.nan)
    for r, row in enumerate(grid.values):
        for c, v in enumerate(row):
            if v is not None:
                data[r, c] = v
    image = ax.imshow(np.ma.masked_invalid(data), vmin=vmin, vmax=vmax, cmap=cmap, aspect="auto")
    ax.set_xticks(range(len(grid.cols)), list(grid.cols))
    ax.set_yticks(range(len(grid.rows)), list(grid.rows))
    if rows * cols <= 400:
        for r in range(len(grid.rows)):
            for c in range(len(grid.cols)):
                if not np.isnan(data[r, c]):
                    red, green, blue, _ = image.cmap(image.norm(data[r, c]))
                    dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
                    ax.text(c, r, f"{data[r, c]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")
    if undefined:
        # Undefined cells (evaluated, but UB <= R) must not look like missing ones: hatched grey, in the legend.
        from matplotlib.patches import Patch, Rectangle

        for r, c in undefined:
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor="#d0d0d0", edgecolor="#606060",
                                   hatch="///", linewidth=0.0))
        fig.legend(handles=[Patch(facecolor="#d0d0d0", edgecolor="#606060", hatch="///",
                                  label=f"undefined (UB <= R): {len(undefined)} cell(s)"),
                            Patch(facecolor="white", edgecolor="#606060", label="not evaluated")],
                   loc="outside lower center", fontsize=7, ncol=1, frameon=False)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def encode(fig: Figure, fmt: str) -> bytes:
    """The figure as ``svg`` or ``png`` bytes (deterministic SVG ids, no timestamp)."""
    import matplotlib

    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        fig.savefig(buf, format=fmt, dpi=150, metadata=metadata)
    return buf.getvalue()


def write_figures(figures: Mapping[str, Figure], directory: Path) -> list[Path]:
    """Write each figure as ``<name>.svg`` and ``<name>.png`` in ``directory``; returns the paths."""
    paths: list[Path] = []
    for name, fig in figures.items():
        for fmt in ("svg", "png"):
            path = Path(directory) / f"{name}.{fmt}"
            atomic_write_bytes(path, encode(fig, fmt))
            paths.append(path)
    return paths
